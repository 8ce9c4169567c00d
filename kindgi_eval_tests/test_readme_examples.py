"""The example outputs of the README and of the pages under docs/ are what the commands beside them print.

An example is a fenced block right under a line `<!-- output of: COMMAND -->`. COMMAND runs in the repository
with a fresh runtime folder; every line of the block must be a line of its standard output, in order. A line
`...` stands for any number of lines, and `...` inside a line for any text."""

from __future__ import annotations

import re
import shlex
from typing import NamedTuple

import pytest

from kindgi_eval_tests.conftest import REPO, run_cli

README = REPO / "README.md"
DOCS = sorted((REPO / "docs").glob("**/*.md"))
PAGES = [README, *DOCS]
"""Every page whose examples are checked: the README first, then docs/ in path order."""
MARKER = re.compile(r"^<!-- output of: ([^\n]+) -->\n```[a-z]*\n(.*?)^```$", re.M | re.S)


class Example(NamedTuple):
    command: str
    lines: list[str]


class PageExample(NamedTuple):
    """One example and the page it is on, relative to the repository."""

    page: str
    example: Example


def examples(text: str) -> list[Example]:
    return [Example(m.group(1), m.group(2).rstrip("\n").split("\n")) for m in MARKER.finditer(text)]


def page_examples() -> list[PageExample]:
    return [
        PageExample(str(page.relative_to(REPO)), example) for page in PAGES for example in examples(page.read_text())
    ]


def line_pattern(expected: str) -> re.Pattern[str]:
    return re.compile(".*".join(re.escape(part) for part in expected.split("...")))


def unmatched(expected: list[str], actual: list[str]) -> str | None:
    """The first expected line not found where it must be, or None when the whole example matches."""
    at, skipping = 0, False
    for line in expected:
        if line == "...":
            skipping = True
            continue
        pattern = line_pattern(line)
        while at < len(actual) and not pattern.fullmatch(actual[at]):
            if not skipping:
                return f"{line!r}, but the output has {actual[at]!r}"
            at += 1
        if at == len(actual):
            return f"{line!r}, not in the output after that point"
        at, skipping = at + 1, False
    return None


def test_the_pages_have_examples_to_check() -> None:
    assert len(page_examples()) >= 2


def test_the_readme_itself_shows_the_offline_run() -> None:
    # the landing page keeps its one run; the other examples may live under docs/
    assert "kindgi-eval run --mock" in [example.command for example in examples(README.read_text())]


def test_unmatched_reads_the_ellipses_as_the_docstring_says() -> None:
    actual = ["a", "b 1 c", "d", "e"]
    assert unmatched(["a", "b ... c", "...", "e"], actual) is None
    assert unmatched(["a", "d"], actual) is not None  # a missing line needs a `...`
    assert unmatched(["...", "f"], actual) is not None


@pytest.mark.parametrize("found", page_examples(), ids=lambda found: f"{found.page}: {found.example.command}")
def test_an_example_output_is_what_its_command_prints(found: PageExample, home) -> None:
    command = shlex.split(found.example.command)
    assert command[0] == "kindgi-eval", f"{found.page}: an example runs the product's own command"
    done = run_cli(*command[1:], cwd=REPO)
    assert done.code in (0, 1), done.err
    problem = unmatched(found.example.lines, done.out.splitlines())
    assert problem is None, f"{found.page}: the example of `{found.example.command}` expects {problem}"

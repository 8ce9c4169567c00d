"""The README's example outputs are what the commands beside them print.

An example is a fenced block right under a line `<!-- output of: COMMAND -->`. COMMAND runs in the repository
with a fresh runtime folder; every line of the block must be a line of its standard output, in order. A line
`...` stands for any number of lines, and `...` inside a line for any text."""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import NamedTuple

import pytest

from kindgi_eval_tests.conftest import REPO, run_cli

README = REPO / "README.md"
MARKER = re.compile(r"^<!-- output of: ([^\n]+) -->\n```[a-z]*\n(.*?)^```$", re.M | re.S)


class Example(NamedTuple):
    command: str
    lines: list[str]


def examples(text: str) -> list[Example]:
    return [Example(m.group(1), m.group(2).rstrip("\n").split("\n")) for m in MARKER.finditer(text)]


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


def test_the_readme_has_examples_to_check() -> None:
    assert len(examples(README.read_text())) >= 2


def test_unmatched_reads_the_ellipses_as_the_docstring_says() -> None:
    actual = ["a", "b 1 c", "d", "e"]
    assert unmatched(["a", "b ... c", "...", "e"], actual) is None
    assert unmatched(["a", "d"], actual) is not None  # a missing line needs a `...`
    assert unmatched(["...", "f"], actual) is not None


@pytest.mark.parametrize("example", examples(README.read_text()), ids=lambda e: e.command)
def test_an_example_output_is_what_its_command_prints(example: Example, home) -> None:
    command = shlex.split(example.command)
    assert command[0] == "kindgi-eval", "an example runs the product's own command"
    done = run_cli(*command[1:], cwd=REPO)
    assert done.code in (0, 1), done.err
    problem = unmatched(example.lines, done.out.splitlines())
    assert problem is None, f"README example of `{example.command}` expects {problem}"

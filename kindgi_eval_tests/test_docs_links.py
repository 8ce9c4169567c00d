"""Every relative link of the README, of the pages under docs/ and of benchmarks/README.md leads somewhere: to a
file that exists and, after a `#`, to a heading of that page by GitHub's anchor rule (lower case, spaces to `-`,
punctuation other than `-` and `_` dropped, a repeated heading suffixed `-1`, `-2`, ...). Links in code are no
links, and headings in fenced blocks are no headings."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote

import pytest

from kindgi_eval_tests.conftest import REPO

PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("**/*.md")), REPO / "benchmarks" / "README.md"]
"""Every page whose links are checked."""
FENCE = re.compile(r"^\s*(```|~~~)")
HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t#]*$")
CODE_SPAN = re.compile(r"`[^`]*`")
LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
"""An inline link or image; its text may run over several lines."""
REFERENCE = re.compile(r"^[ ]{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)", re.M)
"""A reference definition, `[name]: target`."""
SCHEME = re.compile(r"^([a-z][a-z0-9+.-]*:|//)", re.I)


def unfenced(text: str) -> str:
    """The text with every line of a fenced block, fences included, made blank."""
    lines, fenced = [], False
    for line in text.split("\n"):
        if FENCE.match(line):
            fenced = not fenced
            lines.append("")
        else:
            lines.append("" if fenced else line)
    return "\n".join(lines)


def slug(heading: str) -> str:
    """GitHub's anchor of a heading's text."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(text: str) -> set[str]:
    """The anchor of every heading of a page, a repeated one suffixed by how often it came before."""
    seen: dict[str, int] = {}
    found = set()
    for line in unfenced(text).split("\n"):
        match = HEADING.match(line)
        if not match:
            continue
        base = slug(match.group(1))
        count = seen.get(base, 0)
        found.add(base if count == 0 else f"{base}-{count}")
        seen[base] = count + 1
    return found


def links(text: str) -> list[str]:
    """Every link target of a page, outside code."""
    prose = CODE_SPAN.sub("", unfenced(text))
    return [m.group(1) for m in LINK.finditer(prose)] + [m.group(1) for m in REFERENCE.finditer(prose)]


def broken(page: Path, root: Path = REPO) -> list[str]:
    """`page: target: what is wrong` for each relative link of the page that leads nowhere."""
    problems = []
    name = page.relative_to(root)
    for target in links(page.read_text()):
        if SCHEME.match(target):
            continue
        path, _, anchor = target.partition("#")
        dest = (page.parent / unquote(path)).resolve() if path else page
        if not dest.exists():
            problems.append(f"{name}: {target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest.read_text()):
            problems.append(f"{name}: {target}: no heading with the anchor #{anchor} in {dest.relative_to(root)}")
    return problems


@pytest.mark.parametrize(
    ("heading", "anchor"),
    [
        ("A real judge, offline", "a-real-judge-offline"),
        ("The case format (`cases.jsonl`)", "the-case-format-casesjsonl"),  # backticks, dots, brackets dropped
        ("Tenants (`KINDGI_TENANTS`)", "tenants-kindgi_tenants"),  # `_` is kept
        ("Production: a PostgreSQL instance", "production-a-postgresql-instance"),
        ("The `human-review` kind", "the-human-review-kind"),  # `-` is kept
        ("Replay, diff -> prune", "replay-diff---prune"),  # each space is a `-`, so two spaces make two
    ],
)
def test_a_heading_has_githubs_anchor(heading: str, anchor: str) -> None:
    assert slug(heading) == anchor


def test_a_repeated_heading_is_suffixed_and_a_fenced_one_is_no_heading() -> None:
    text = "# Top\n\n## Notes\n\n```bash\n# not a heading\n```\n\n## Notes\n"
    assert anchors(text) == {"top", "notes", "notes-1"}


def test_a_link_in_code_is_no_link_and_link_text_may_wrap() -> None:
    text = "See [the\nrules](judge.md#rules), not `[x](nowhere.md)`.\n\n```\n[y](nowhere.md)\n```\n\n[ref]: other.md\n"
    assert links(text) == ["judge.md#rules", "other.md"]


def test_broken_names_a_missing_file_and_a_missing_heading(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "judge.md").write_text("# The judge\n\n## How verdicts are reached\n")
    page = tmp_path / "README.md"
    page.write_text(
        "[ok](docs/judge.md#how-verdicts-are-reached) [self](#top) [web](https://example.com/x.md#y)\n"
        "[gone](docs/store.md) [moved](docs/judge.md#the-judge-offline)\n\n# Top\n"
    )
    assert broken(page, tmp_path) == [
        "README.md: docs/store.md: no such file",
        "README.md: docs/judge.md#the-judge-offline: no heading with the anchor #the-judge-offline in docs/judge.md",
    ]


def test_the_docs_are_there_to_check() -> None:
    names = {str(page.relative_to(REPO)) for page in PAGES if page.exists()}
    assert {"README.md", "docs/running.md", "docs/suites.md", "benchmarks/README.md"} <= names


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(REPO)))
def test_every_relative_link_resolves(page: Path) -> None:
    assert broken(page) == []

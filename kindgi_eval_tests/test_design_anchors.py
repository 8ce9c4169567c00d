"""Every rule the tree cites names a heading that exists: a `docs/<page>.md#anchor` written anywhere in the code, the
tests, the docs, the benchmarks and `.ci/run` (and a page's own `design.md#anchor` link) is a heading of that page by
GitHub's anchor rule. And nothing cites what a reader of the repository cannot open: a numbered spec, a lettered
constraint in brackets, a design file outside the repository or a folder beside it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kindgi_eval_tests.conftest import REPO
from kindgi_eval_tests.test_docs_links import anchors

TEXT_SUFFIXES = {".py", ".md", ".toml", ".yaml", ".yml", ".sh", ".js", ".txt", ".cfg", ".json"}
"""The files read: source, tests, docs, configuration."""
TEXT_NAMES = {"run", "Dockerfile"}
"""Files without a suffix that are read too (`.ci/run`, `deploy/Dockerfile`)."""
SKIPPED_FOLDERS = {".git", ".venv", "node_modules", "__pycache__", ".pytest_cache", ".ruff_cache"}
"""Folders that hold no text of the project's own: the environment and caches."""
CITED = re.compile(r"((?:\.\./)*[\w/-]*?\.md)#([\w-]+)")
"""A page and an anchor: `docs/design.md#fail-closed`, or a page's link `design.md#statuses`, `../design.md#kinds`."""
UNREADABLE = re.compile(r"\b[Ss]pecs? 0\d\d\b|\(C\d\)|\bC[1-9]\b|\bDESIGN\b|\.\./shared/")
"""A citation a reader of the repository cannot follow: a spec by number, a constraint by letter, the design file, or
a folder beside the repository."""
REFERENCE_READERS = {"kindgi_eval_tests/deploy/test_helm_values.py"}
"""Tests that read another project's reference data where it lies beside the repository, never copied into it (the
Dagster chart's values schema): the one place a folder outside the repository is named."""
BROKEN_ON_PURPOSE = {"kindgi_eval_tests/test_docs_links.py"}
"""Files whose unresolved anchors are examples of what a check must catch."""


def tree_files(root: Path = REPO) -> list[Path]:
    """Every text file of the project under `root`, this test's own file left out (it names what it forbids)."""
    found = []
    for path in sorted(root.rglob("*")):
        parts = path.relative_to(root).parts
        if any(part in SKIPPED_FOLDERS or part.endswith(".egg-info") or part.startswith(".kindgi") for part in parts):
            continue
        if path.is_file() and (path.suffix in TEXT_SUFFIXES or path.name in TEXT_NAMES) and path != Path(__file__):
            found.append(path)
    return found


def target(page: str, citing: Path, root: Path = REPO) -> Path:
    """The page a citation names: from the repository's root when it starts with `docs/`, else beside the file."""
    return (root / page) if page.startswith("docs/") else (citing.parent / page).resolve()


def unresolved(path: Path, root: Path = REPO) -> list[str]:
    """`file:line: page#anchor: what is wrong` for each cited anchor of a page under docs/ that names no heading."""
    problems = []
    name = path.relative_to(root)
    for number, line in enumerate(path.read_text(errors="replace").split("\n"), 1):
        for match in CITED.finditer(line):
            page, anchor = match.groups()
            dest = target(page, path, root)
            if not dest.is_relative_to(root / "docs"):
                continue
            if not dest.exists():
                problems.append(f"{name}:{number}: {page}#{anchor}: no such page")
            elif anchor not in anchors(dest.read_text()):
                problems.append(f"{name}:{number}: {page}#{anchor}: no heading with that anchor")
    return problems


def unreadable(path: Path, root: Path = REPO) -> list[str]:
    """`file:line: citation` for each citation of the file a reader of the repository cannot follow."""
    name = path.relative_to(root)
    lines = path.read_text(errors="replace").split("\n")
    found = [(n, m.group(0)) for n, line in enumerate(lines, 1) for m in UNREADABLE.finditer(line)]
    if str(name) in REFERENCE_READERS:
        found = [(n, cited) for n, cited in found if cited != "../shared/"]
    return [f"{name}:{n}: {cited}" for n, cited in found]


@pytest.mark.parametrize(
    ("text", "cited"),
    [
        ("never a pass (docs/design.md#fail-closed).", [("docs/design.md", "fail-closed")]),
        ("as docs/design.md#calibration's groups", [("docs/design.md", "calibration")]),
        ("[the precedence](design.md#precedence)", [("design.md", "precedence")]),
        ("[kinds](../design.md#kinds)", [("../design.md", "kinds")]),
        (
            "see docs/running.md#a-litellm-gateway and docs/design.md#the-judge",
            [
                ("docs/running.md", "a-litellm-gateway"),
                ("docs/design.md", "the-judge"),
            ],
        ),
        ("docs/design.md, no anchor", []),
    ],
)
def test_a_citation_is_found_with_its_page_and_anchor(text: str, cited: list[tuple[str, str]]) -> None:
    assert [m.groups() for m in CITED.finditer(text)] == cited


@pytest.mark.parametrize(
    ("text", "flagged"),
    [
        ("the rules of spec 016", ["spec 016"]),
        ("Spec 009's assertions", ["Spec 009"]),
        ("specs 009 and 016", ["specs 009"]),
        ("never a pass (C6)", ["(C6)"]),
        ("C3, C6", ["C3", "C6"]),
        ("as DESIGN.md names it", ["DESIGN"]),
        ("DESIGN's table", ["DESIGN"]),
        ("read from ../shared/ref/dagster-chart/", ["../shared/"]),
        ("a C10 capacitor, 2 CPUs, C9H8O4, a spec 16 of ours, the design page", []),
    ],
)
def test_an_unreadable_citation_is_flagged(text: str, flagged: list[str]) -> None:
    assert [m.group(0) for m in UNREADABLE.finditer(text)] == flagged


def test_a_missing_anchor_and_a_missing_page_are_named(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "design.md").write_text("# Rules\n\n## Fail closed\n")
    code = tmp_path / "rule.py"
    code.write_text('"""Never a pass (docs/design.md#fail-closed)."""\n# docs/design.md#fail-open, docs/gone.md#x\n')
    assert unresolved(code, tmp_path) == [
        "rule.py:2: docs/design.md#fail-open: no heading with that anchor",
        "rule.py:2: docs/gone.md#x: no such page",
    ]


def test_the_tree_holds_the_files_that_cite() -> None:
    names = {str(path.relative_to(REPO)) for path in tree_files()}
    assert {".ci/run", "docs/design.md", "kindgi_eval/rules/verdicts.py", "README.md"} <= names
    assert not any(name.startswith(".venv/") for name in names)


def test_every_cited_anchor_names_a_heading() -> None:
    problems = [
        problem
        for path in tree_files()
        if str(path.relative_to(REPO)) not in BROKEN_ON_PURPOSE
        for problem in unresolved(path)
    ]
    assert problems == []


def test_no_file_cites_what_the_repository_does_not_hold() -> None:
    problems = [problem for path in tree_files() for problem in unreadable(path)]
    assert problems == []

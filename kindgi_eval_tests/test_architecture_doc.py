"""docs/architecture.md's "Where a change goes" names files and tables that exist: every path it gives is in the
repository, and every name it says a change is one entry of, or sits in a module, is defined in that module."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from kindgi_eval_tests.conftest import REPO

PACKAGE = REPO / "kindgi_eval"
PAGE = REPO / "docs" / "architecture.md"
SECTION = "## Where a change goes"

PATH = re.compile(r"^[\w.<>-]+(?:/[\w.<>-]+)*(?:/|\.py|\.md)$")
"""A code span that is a path: a folder (`kinds/`), a module (`inputs/settings.py`), a page (`docs/suites.md`)."""
NAME_IN = re.compile(r"`(\w+)` (?:in|of) `([\w/.]+\.py)`")
"""`SETTINGS` in `inputs/settings.py`: the name is defined at the top of that module."""
POSSESSIVE = re.compile(r"`([\w/.]+\.py)`'s `(\w+)`")
"""`cli/main.py`'s `COMMANDS`: the same, said the other way round."""
ENTRY = re.compile(r"one (?:entry|row) (?:in|of) `(\w+)`((?:, `\w+`)*(?: or `\w+`)?)")
"""One entry in `X` (or `Y`): each table is defined in a module the same item names."""


def bullets(page: str) -> list[str]:
    """The items of the section, each on one line."""
    section = page.split(SECTION, 1)[1].split("\n## ", 1)[0]
    return [" ".join(item.split()) for item in re.split(r"\n- ", section) if item.strip()]


def module_names(path: Path) -> set[str]:
    """The names a module defines at its top: functions, classes and assigned names."""
    names: set[str] = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names


def resolve(span: str, folder: Path | None) -> list[Path]:
    """Where a path of the section may be: under the package, the repository, or (a bare file or folder name)
    anywhere under the last folder the same item named."""
    name = span.rstrip("/")
    if "/" not in name and folder is not None:
        near = sorted(p for p in folder.rglob(name) if p.is_dir() == span.endswith("/"))
        if near or not span.endswith("/"):
            return near
    return [p for p in (PACKAGE / span, REPO / span) if p.exists()]


def problems_of(item: str) -> tuple[list[str], int]:
    """What is wrong with one item of the section, and how many paths and names it was checked for."""
    problems: list[str] = []
    checked = 0
    folder: Path | None = None
    modules: dict[str, Path] = {}
    for span in re.findall(r"`([^`]+)`", item):
        if not PATH.match(span) or "<" in span:
            continue
        checked += 1
        found = resolve(span, folder)
        if not found:
            problems.append(f"{span}: no such file or folder")
        elif span.endswith("/"):
            folder = found[0]
        elif span.endswith(".py"):
            modules[span] = found[0]
    pairs = [(m, n) for n, m in NAME_IN.findall(item)] + POSSESSIVE.findall(item)
    for module, name in pairs:
        checked += 1
        if module in modules and name not in module_names(modules[module]):
            problems.append(f"{module}: defines no {name}")
    for first, more in ENTRY.findall(item):
        for table in [first, *re.findall(r"`(\w+)`", more)]:
            checked += 1
            if not any(table in module_names(path) for path in modules.values()):
                problems.append(f"{table}: no module this item names defines it")
    return problems, checked


def test_every_path_and_table_the_section_names_exists() -> None:
    items = bullets(PAGE.read_text())
    found = {item.split(":", 1)[0]: problems_of(item) for item in items}
    assert not {where: problems for where, (problems, _) in found.items() if problems}
    # each kind of change the page promises is there, and was checked for something
    for change in (
        "a new assertion",
        "a new setting",
        "a new view",
        "a new command",
        "a new agent transport",
        "a new kind of suite",
    ):
        assert any(where.startswith(change) and checked >= 3 for where, (_, checked) in found.items()), change


@pytest.mark.parametrize(
    ("item", "problem"),
    [
        # a module that is not there
        ("a change: `inputs/nowhere.py`", "inputs/nowhere.py: no such file or folder"),
        # a name the module does not define, said either way round
        ("a change: `NOTHING` in `inputs/settings.py`", "inputs/settings.py: defines no NOTHING"),
        ("a change: `cli/main.py`'s `NOTHING`", "cli/main.py: defines no NOTHING"),
        # a table no named module holds
        ("a change: one entry in `NO_TABLE` in `agents/factory.py`", "NO_TABLE: no module this item names defines it"),
        ("a change: one entry in `OFFLINE_AGENTS` or `NO_TABLE`, `agents/factory.py`", "NO_TABLE: no module"),
        # a bare file name is looked for under the folder named before it
        ("a change: `cli/` (`nowhere.py`)", "nowhere.py: no such file or folder"),
    ],
)
def test_a_missing_path_or_name_is_found(item: str, problem: str) -> None:
    problems, _ = problems_of(item)
    assert any(p.startswith(problem) for p in problems), problems


def test_what_exists_passes() -> None:
    item = "a change: one row of `SETTINGS` in `inputs/settings.py`; `cli/` (`run.py`), `cli/main.py`'s `COMMANDS`"
    # four paths, SETTINGS in its module, COMMANDS in its module, and SETTINGS as a table of a named module
    assert problems_of(item) == ([], 7)

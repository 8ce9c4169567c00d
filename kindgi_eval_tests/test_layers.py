"""The package's folders are ranked: a module imports only its own folder and the folders ranked below it.

Read from the source itself (every module's imports, with ast), so a new module cannot slip past the rule.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "kindgi_eval"
RANKS = ["spec", "llm", "prompts", "store", "inputs", "registry", "agents", "kinds", "steps", "reports", "defs", "cli"]
"""Lowest first: each folder may import the folders before it."""
TOP_LEVEL = {"__init__", "__main__"}
REACHED_BY_NAME = {"agents.http", "agents.litellm"}
"""Modules that import httpx or litellm: only their own folder's name-to-agent table imports them, on demand."""
ONLY_IMPORTER = {
    "litellm": {"llm"}, "dagster": {"defs"}, "click": {"cli"}, "httpx": {"agents"},
    "fastapi": {"registry"}, "starlette": {"registry"}, "uvicorn": {"registry"}, "alembic": {"registry"},
    "sqlalchemy": {"registry", "defs"},  # the registry's tables; Dagster's storage (defs/instance_storage.py) is built on it
}
"""A library and the folders that may import it: one, but for SQLAlchemy, under both the registry and Dagster."""
SPEC_MAY_IMPORT = {"pydantic", "regex", "re2", "__future__"}  # regex: Unicode emoji properties; re2: tenant patterns; pure text
"""Beside the standard library, all spec/ imports."""


def modules() -> list[tuple[str, Path]]:
    return sorted((".".join(p.relative_to(PACKAGE).with_suffix("").parts), p) for p in PACKAGE.rglob("*.py"))


def imports_of(path: Path) -> list[tuple[str, list[str], int]]:
    """Every import in a module, top level or inside a function: (module, names, line)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.module, [a.name for a in node.names], node.lineno))
        elif isinstance(node, ast.Import):
            found += [(a.name, [], node.lineno) for a in node.names]
    return found


def test_every_module_lives_in_a_ranked_folder() -> None:
    loose = [name for name, _ in modules() if "." not in name and name not in TOP_LEVEL]
    assert loose == []
    assert {name.split(".")[0] for name, _ in modules() if "." in name} == set(RANKS)


def test_every_folder_states_its_rule_and_what_others_may_use() -> None:
    for folder in RANKS:
        init = PACKAGE / folder / "__init__.py"
        doc = ast.get_docstring(ast.parse(init.read_text()))
        assert doc and "\n" not in doc.strip(), f"{folder}/__init__.py must open with its rule in one line"
        package = importlib.import_module(f"kindgi_eval.{folder}")
        assert all(hasattr(package, name) for name in getattr(package, "__all__", []))


def test_imports_run_down_the_ranks_and_across_folders_only_through_their_names() -> None:
    wrong = []
    for name, path in modules():
        if name in TOP_LEVEL:
            continue
        folder = name.split(".")[0]
        for module, names, line in imports_of(path):
            where = f"kindgi_eval/{path.relative_to(PACKAGE)}:{line}: {module}"
            if not module.startswith("kindgi_eval"):
                continue
            parts = module.split(".")
            if len(parts) == 1:
                wrong.append(f"{where}: import a folder, not the package root")
                continue
            target = parts[1]
            if target == folder:
                continue
            if RANKS.index(target) > RANKS.index(folder):
                wrong.append(f"{where}: {folder} ranks below {target}")
            elif len(parts) > 2:
                wrong.append(f"{where}: another folder's module; import its names from kindgi_eval.{target}")
            else:
                exported = set(getattr(importlib.import_module(module), "__all__", []))
                wrong += [f"{where}: {n} is not in {target}'s __all__" for n in names if n not in exported]
    assert wrong == []


def test_modules_reached_by_name_are_imported_only_by_their_own_folder() -> None:
    for name, path in modules():
        for module, _, line in imports_of(path):
            if module.removeprefix("kindgi_eval.") in REACHED_BY_NAME:
                assert name.split(".")[0] == module.split(".")[1], f"{name}:{line} imports {module}"


@pytest.mark.parametrize(("library", "owners"), sorted(ONLY_IMPORTER.items()))
def test_a_library_has_one_importing_folder(library: str, owners: set[str]) -> None:
    importers = {
        name.split(".")[0]
        for name, path in modules()
        for module, _, _ in imports_of(path)
        if module.split(".")[0] == library and name not in TOP_LEVEL
    }
    assert importers <= owners


def test_spec_imports_only_pydantic_and_the_standard_library() -> None:
    import sys

    allowed = set(sys.stdlib_module_names) | SPEC_MAY_IMPORT
    for name, path in modules():
        if name.startswith("spec."):
            for module, _, line in imports_of(path):
                top = module.split(".")[0]
                assert top == "kindgi_eval" or top in allowed, f"{name}:{line} imports {module}"

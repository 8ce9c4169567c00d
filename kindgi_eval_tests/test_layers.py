"""The package's folders are ranked: a module imports only its own folder and the folders ranked below it.

Read from the source itself (every module's imports, with ast), so a new module cannot slip past the rule.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "kindgi_eval"
RANKS = ["rules", "llm", "prompts", "store", "inputs", "registry", "agents", "kinds", "steps", "reports", "defs", "cli"]
"""Lowest first: each folder may import the folders before it."""
TOP_LEVEL = {"__init__", "__main__"}
REACHED_BY_NAME = {"agents.http", "agents.litellm"}
"""Modules that import httpx or litellm: only their own folder's name-to-agent table imports them, on demand."""
ONLY_IMPORTER = {
    "litellm": {"llm"},
    "dagster": {"defs"},
    "click": {"cli"},
    "httpx": {"agents", "llm"},
    "fastapi": {"registry"},
    "starlette": {"registry"},
    "uvicorn": {"registry"},
    "botocore": {"store"},
    "aiobotocore": {"store"},  # an S3 store's client (store/s3.py)
    # the registry's tables and their migrations; Dagster's storage (defs/instance_storage.py) is built on both
    "sqlalchemy": {"registry", "defs"},
    "alembic": {"registry", "defs"},
}
"""A library and the folders that may import it: one, but for SQLAlchemy and alembic, under both the registry and
Dagster."""
RULES_MAY_IMPORT = {
    "pydantic",
    "regex",
    "re2",
    "__future__",
}  # regex: Unicode emoji properties; re2: tenant patterns; pure text
"""Beside the standard library, all rules/ imports."""


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


def import_graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    """Each module of `package` and the modules of it that it imports, at the top or inside a function: `from a import
    b` imports module `a.b` when there is one, else the names of `a` (its `__init__`)."""
    named = {
        ".".join((package.name, *p.relative_to(package).with_suffix("").parts)).removesuffix(".__init__"): p
        for p in package.rglob("*.py")
    }
    graph = {}
    for name, path in named.items():
        imported = set()
        for module, names, _ in imports_of(path):
            submodules = {f"{module}.{n}" for n in names} & named.keys()
            imported |= submodules
            if len(submodules) < len(names) or not names:
                imported.add(module)
        graph[name] = imported & named.keys()
    return graph


def circles(graph: dict[str, set[str]]) -> list[str]:
    """The import circles a depth-first walk of `graph` closes, each as `a -> b -> a`; at least one for every set of
    modules that import each other."""
    found: list[str] = []
    walked: set[str] = set()
    path: list[str] = []

    def walk(name: str) -> None:
        path.append(name)
        for target in sorted(graph[name]):
            if target in path:
                found.append(" -> ".join([*path[path.index(target) :], target]))
            elif target not in walked:
                walk(target)
        path.pop()
        walked.add(name)

    for name in sorted(graph):
        if name not in walked:
            walk(name)
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


def test_rules_imports_only_pydantic_and_the_standard_library() -> None:
    import sys

    allowed = set(sys.stdlib_module_names) | RULES_MAY_IMPORT
    for name, path in modules():
        if name.startswith("rules."):
            for module, _, line in imports_of(path):
                top = module.split(".")[0]
                assert top == "kindgi_eval" or top in allowed, f"{name}:{line} imports {module}"


def test_no_module_imports_one_that_imports_it_back() -> None:
    """Within a folder as across folders, directly or through others, and inside functions too: what two modules
    both need lives in one of them, or in a third that neither imports back."""
    found = circles(import_graph())
    assert not found, "modules that import each other:\n" + "\n".join(found)


def test_a_circle_through_a_function_level_import_is_found(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text(
        "from pkg.sub import b\n"
    )  # `sub.b` is a module: the import names it, not sub/__init__
    (package / "sub" / "__init__.py").write_text("")
    (package / "sub" / "b.py").write_text("def later():\n    from pkg.c import name\n")
    (package / "c.py").write_text("import pkg.a\nname = 1\n")
    assert circles(import_graph(package)) == ["pkg.a -> pkg.sub.b -> pkg.c -> pkg.a"]
    (package / "c.py").write_text("name = 1\n")
    assert circles(import_graph(package)) == []


def test_imports_are_absolute() -> None:
    """`from kindgi_eval.<folder> import x`, never `from . import x` or `from .x import y`: a reader, grep and the
    rules above see the whole name."""
    relative = [
        f"kindgi_eval/{path.relative_to(PACKAGE)}:{node.lineno}"
        for _, path in modules()
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.ImportFrom) and node.level > 0
    ]
    assert not relative, "relative imports; name the module whole:\n" + "\n".join(relative)

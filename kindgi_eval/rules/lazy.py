"""A folder's names imported when first used. Its `__init__` imports them under `if TYPE_CHECKING:`, where a reader,
a type checker and the import-rank test see them, and takes its `__getattr__` from here: a command pays for the
modules it uses (`night` for no Parquet writer, `--help` for no DuckDB), not for every module of every folder it
touches. Reads the `__init__`'s own source once, as the folder is imported."""

from __future__ import annotations

import ast
import importlib
import sys
from collections.abc import Callable
from pathlib import Path


def lazy_names(package: str, init_file: str) -> Callable[[str], object]:
    """The module `__getattr__` of the folder `package`, whose `__init__` is `init_file`: a name imported under its
    `if TYPE_CHECKING:` is imported from its module when first asked for, and kept on the folder. A name that is also
    one of the folder's modules cannot wait (importing that module would set the folder's attribute to the module):
    it is refused here, and imported at the top of the `__init__` instead."""
    where = {
        alias.asname or alias.name: (statement.module, alias.name)
        for node in ast.parse(Path(init_file).read_text(encoding="utf-8")).body
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"
        for statement in node.body
        if isinstance(statement, ast.ImportFrom) and statement.module
        for alias in statement.names
    }
    folder = Path(init_file).parent
    clashing = sorted(n for n in where if (folder / f"{n}.py").exists() or (folder / n).is_dir())
    if clashing:
        raise ImportError(f"{init_file}: {', '.join(clashing)} name modules of {package}; import them at the top.")

    def __getattr__(name: str) -> object:
        if name not in where:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, attribute = where[name]
        value = getattr(importlib.import_module(module), attribute)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__

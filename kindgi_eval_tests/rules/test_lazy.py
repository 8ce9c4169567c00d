"""A folder's names imported when first used: each from its own module, once, and only that module."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

INIT = '''"""A folder."""

from typing import TYPE_CHECKING

from kindgi_eval.rules import lazy_names
from pkg.eager import READY

if TYPE_CHECKING:
    from pkg.heavy import SLOW
    from pkg.light import FAST, fast_twice as twice

__all__ = ["READY", "SLOW", "FAST", "twice"]
__getattr__ = lazy_names(__name__, __file__)
'''


def folder(tmp_path: Path, init: str = INIT) -> Path:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text(init)
    (package / "eager.py").write_text("READY = 'ready'\n")
    (package / "heavy.py").write_text("SLOW = 'slow'\n")
    (package / "light.py").write_text("FAST = 'fast'\n\ndef fast_twice():\n    return FAST * 2\n")
    return tmp_path


def run(tmp_path: Path, code: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], cwd=tmp_path, capture_output=True, text=True, check=False
    )


def test_a_name_imports_its_own_module_when_first_used(tmp_path: Path) -> None:
    done = run(
        folder(tmp_path),
        """
        import sys
        import pkg
        print(sorted(m for m in sys.modules if m.startswith("pkg.")))
        from pkg import FAST, twice
        print(FAST, twice(), sorted(m for m in sys.modules if m.startswith("pkg.")))
        print(pkg.SLOW, "SLOW" in vars(pkg), sorted(m for m in sys.modules if m.startswith("pkg.")))
        """,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "['pkg.eager']",  # imported at the top: nothing else yet
        "fast fastfast ['pkg.eager', 'pkg.light']",  # `as` keeps the name the folder gives it
        "slow True ['pkg.eager', 'pkg.heavy', 'pkg.light']",  # kept on the folder: the next use asks no one
    ]


def test_a_name_the_folder_does_not_export_is_an_attribute_error(tmp_path: Path) -> None:
    done = run(folder(tmp_path), "import pkg\nprint(hasattr(pkg, 'nothing'))\nfrom pkg import nothing\n")
    assert done.stdout == "False\n"
    assert "ImportError: cannot import name 'nothing' from 'pkg'" in done.stderr


def test_a_name_that_is_also_a_module_of_the_folder_is_refused(tmp_path: Path) -> None:
    # importing pkg.light from anywhere would set pkg.light to the module, hiding the name for good
    init = INIT.replace("from pkg.light import FAST", "from pkg.light import FAST, light")
    (folder(tmp_path, init) / "pkg" / "light.py").write_text("FAST = 'fast'\nlight = 1\n")
    done = run(tmp_path, "import pkg\n")
    assert done.returncode == 1
    assert "__init__.py: light name modules of pkg; import them at the top." in done.stderr


@pytest.mark.parametrize(
    ("words", "never"),
    [
        # the night's read lists runs by their folders and queries with DuckDB: no Parquet writer, no Dagster
        (["night"], {"pyarrow", "numpy", "dagster", "litellm", "kindgi_eval.steps", "kindgi_eval.kinds"}),
        (["--help"], {"pyarrow", "duckdb", "dagster", "litellm", "upath", "kindgi_eval.store"}),
    ],
)
def test_a_command_imports_only_what_it_uses(tmp_path: Path, words: list[str], never: set[str]) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import json, sys\nfrom kindgi_eval.cli import main\ntry:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
            "print(json.dumps(sorted(sys.modules)), file=sys.stderr)",
            *words,
        ],
        cwd=tmp_path,
        env={**os.environ, "KINDGI_HOME": str(tmp_path / "home"), "KINDGI_TENANTS": ""},
        capture_output=True,
        text=True,
        check=False,
    )
    imported = set(json.loads(done.stderr.strip().splitlines()[-1]))
    assert "kindgi_eval.cli.main" in imported
    assert not {m for m in imported if any(m == n or m.startswith(f"{n}.") for n in never)}

"""The package as a user installs it: the wheel built from this checkout, installed into a fresh venv, run in an empty
folder, where the golden set, the demo tenant and every kind's starter must come from the installed package alone.

The fresh venv gets the wheel without its dependencies (`--no-deps`): it reaches this test venv's installed ones
through a `.pth` file, which adds their folder to `sys.path` after its own. Python processes the `.pth` files of a
site folder only, not of a folder a `.pth` line adds, so the editable install of the checkout (itself a `.pth` hook)
is never taken: the test asserts that `kindgi_eval` is imported from inside the fresh venv."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from kindgi_eval.kinds import kinds
from kindgi_eval_tests.conftest import REPO

BUILD_IGNORES = (
    ".git",
    ".venv",
    "build",
    "*.egg-info",
    "__pycache__",
    ".pytest_cache",
    ".hypothesis",
    ".kindgi*",
    "node_modules",
    "cache",
    "out",
)
"""What of the checkout the wheel is not built from: version control, environments, earlier builds, runtime state."""


def _run(command: list[str], cwd: Path, env: dict[str, str], timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv holding the wheel of this checkout and nothing else; its `bin/` folder."""
    root = tmp_path_factory.mktemp("wheel")
    # a copy of the checkout, so that setuptools' build/ folder is a new one (a stale one in the checkout would put
    # files no longer in the package into the wheel) and no other process's build sees it
    source = root / "source"
    shutil.copytree(REPO, source, symlinks=True, ignore=shutil.ignore_patterns(*BUILD_IGNORES))
    built = _run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(root / "dist"), str(source)],
        root,
        os.environ.copy(),
    )
    assert built.returncode == 0, built.stderr
    (wheel,) = (root / "dist").glob("kindgi_eval-*.whl")
    venv = root / "venv"
    made = _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], root, os.environ.copy())
    assert made.returncode == 0, made.stderr
    python = venv / "bin" / "python"
    added = _run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "-q",
            "--no-deps",
            "--no-compile",
            str(wheel),
        ],
        root,
        os.environ.copy(),
    )
    assert added.returncode == 0, added.stderr
    site = _run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], root, os.environ.copy()
    )
    (Path(site.stdout.strip()) / "kindgi_eval_test_dependencies.pth").write_text(
        sysconfig.get_paths()["purelib"] + "\n"
    )
    return venv / "bin"


@pytest.mark.long
def test_the_installed_wheel_runs_the_golden_set_and_every_starter_in_an_empty_folder(
    installed: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "empty"
    folder.mkdir()
    env = {
        k: v
        for k, v in os.environ.items()
        if k
        not in (
            "PYTHONPATH",
            "EVAL_DIR",
            "CONFIG_DIR",
            "AGENT_MODEL",
            "AGENT_URL",
            "EVAL_JUDGE_MODEL",
            "KINDGI_STORE",
            "KINDGI_TENANTS",
        )
    }
    env |= {"KINDGI_HOME": str(tmp_path / "home"), "DAGSTER_HOME": str(tmp_path / "home" / "dagster")}
    where = _run(
        [
            str(installed / "python"),
            "-c",
            "import kindgi_eval, kindgi_eval.inputs as i; print(kindgi_eval.__file__); print(i.GOLDEN_DIR)",
        ],
        folder,
        env,
    )
    module, golden = map(Path, where.stdout.split())
    assert module.is_relative_to(installed.parent), where.stderr  # the wheel's package, not the checkout's editable one
    assert golden.is_relative_to(installed.parent) and not golden.is_symlink()  # a copy of evals/golden in the wheel

    cli = str(installed / "kindgi-eval")
    demo = _run([cli, "run", "--mock"], folder, env)
    assert demo.returncode == 0, demo.stderr
    assert "Summary: 34 passed, 0 failed, 5 reviewed\n" in demo.stdout
    assert f"suite: demo-academy.golden, the golden set this package ships ({golden})" in demo.stderr

    for kind in sorted(kinds()):
        wrote = _run([cli, "init", kind, "--kind", kind], folder, env)
        assert wrote.returncode == 0, wrote.stderr
    # every starter in one validate: the tenant configuration is the conversation starter's, which a suite document
    # (every other kind's starter) does not read
    checked = _run([cli, "validate", *sorted(kinds()), "--config-dir", "conversation"], folder, env)
    assert checked.returncode == 0, checked.stderr
    assert [line.split(":")[1].strip().split("/")[0] for line in checked.stdout.splitlines()] == sorted(kinds())
    own = _run([cli, "run", "--mock", "--eval-dir", "conversation", "--config-dir", "conversation"], folder, env)
    assert own.returncode == 0, own.stderr
    assert "Summary: 5 passed, 0 failed, 2 reviewed\n" in own.stdout  # its cases and its scenarios
    assert sorted(p.name for p in folder.iterdir()) == sorted(kinds())  # runtime state went to KINDGI_HOME only

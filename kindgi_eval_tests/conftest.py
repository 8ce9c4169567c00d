"""Shared fixtures: a temporary runtime folder and Dagster home, the CLI run as a real process, and fake model servers."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import NamedTuple

import pytest

from kindgi_eval_tests.fake_provider import FakeProvider, Script
from kindgi_eval_tests.warm_cli import WarmCommand, needs_a_fresh_interpreter

REPO = Path(__file__).resolve().parents[1]
GOLDEN = REPO / "evals" / "golden"
GOLDEN_STATUSES = sum(
    1
    for name in ("cases.jsonl", "scenarios.jsonl")
    for line in (GOLDEN / name).read_text().splitlines()
    if line.strip()
)
"""The statuses of a run of the golden set: one per case and one per scenario."""
CLI = Path(sys.executable).parent / "kindgi-eval"


MEMORY_FOLDER = Path("/dev/shm")
"""A memory file system on Linux: where the tests keep their temporary folders when no `--basetemp` is given."""


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    """The tests' temporary folders (pytest's `tmp_path` and every process's TMPDIR) in memory, made once by the
    process that starts the tests (xdist hands each worker a folder inside it).

    A run writes a dozen Parquet files, its run's SQLite databases and the DuckDB export, some 70 of those writes
    waiting for the disk (fsync, 4 to 8 ms here); on a memory file system none does, and nothing the tests check
    depends on the disk. Removed when the tests end; a `--basetemp` of one's own, or a machine without /dev/shm, keeps pytest's."""
    if hasattr(config, "workerinput") or config.option.basetemp or not MEMORY_FOLDER.is_dir():
        return
    folder = Path(tempfile.mkdtemp(prefix="kindgi-tests-", dir=MEMORY_FOLDER))
    config.option.basetemp = str(folder / "pytest")
    os.environ["TMPDIR"] = str(folder)
    tempfile.tempdir = None  # read TMPDIR again
    config.add_cleanup(lambda: _remove_all_but_multiprocessing_s(folder))


def _remove_all_but_multiprocessing_s(folder: Path) -> None:
    """Remove what the tests left in `folder`, but the folders multiprocessing removes as this process exits (a
    forkserver's, which would fail to find its own folder gone), and `folder` itself once empty."""
    for entry in folder.iterdir():
        if entry.name.startswith("pymp-"):
            continue
        if entry.is_dir():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)
    with contextlib.suppress(OSError):
        folder.rmdir()


LONGEST = "test_production_profile.py"
"""The file of the two longest tests, each minutes of waiting on its profile's daemon: its night (with the tests that
share its profile) and its killed run worker, each a group of its own."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The production profile's tests first, then the other tests marked `long`, each in the order collected: each
    worker starts on one while the others share out the rest, instead of the last of them running alone at the end.
    xdist hands out the groups of several tests first, largest first, then the rest in this order: the profile's
    killed run worker, a group of one, is the first of those handed out."""
    items.sort(key=lambda item: (item.path.name != LONGEST, item.get_closest_marker("long") is None))


class Home(NamedTuple):
    """Where a test's runs keep their state."""

    root: Path
    store: Path
    dagster: Path


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Home:
    """A fresh KINDGI_HOME and DAGSTER_HOME, and none of the run variables inherited from the shell."""
    root = tmp_path / "kindgi-home"
    monkeypatch.setenv("KINDGI_HOME", str(root))
    monkeypatch.setenv("DAGSTER_HOME", str(root / "dagster"))
    for var in (
        "KINDGI_STORE",
        "EVAL_DIR",
        "CONFIG_DIR",
        "AGENT_MODEL",
        "AGENT_URL",
        "EVAL_JUDGE_MODEL",
        "EVAL_MAX_LATENCY_MS",
        "EVAL_CONCURRENCY",
    ):
        monkeypatch.delenv(var, raising=False)
    return Home(root, root / "store", root / "dagster")


class Result(NamedTuple):
    """What a finished command left behind."""

    code: int
    out: str
    err: str


WARM = WarmCommand()


def run_cli(
    *args: str, cwd: Path = REPO, env: dict[str, str] | None = None, environ: dict[str, str] | None = None
) -> Result:
    """`kindgi-eval ARGS` as a separate process, in the repository by default, with the test's environment and `env`
    (or with `environ`, its whole environment): forked from a process that has imported the command line, or exec'd
    when its environment changes what Python reads at start."""
    environ = {**os.environ, **(env or {})} if environ is None else environ
    if needs_a_fresh_interpreter(environ):
        done = subprocess.run([str(CLI), *args], cwd=cwd, env=environ, capture_output=True, text=True, timeout=300)
        return Result(done.returncode, done.stdout, done.stderr)
    return Result(*WARM.run(str(CLI), list(args), cwd, environ, timeout=300))


def files_under(path: Path) -> list[Path]:
    """Every file below a folder (none if it does not exist)."""
    return sorted(p for p in path.rglob("*") if p.is_file()) if path.exists() else []


@pytest.fixture
def provider_env(monkeypatch: pytest.MonkeyPatch):
    """Start fake servers and point litellm's OpenAI client at the latest, with a fake key; stop them after."""
    from kindgi_eval.llm.calls import forget_clients

    started: list[FakeProvider] = []

    def start(script: Script) -> FakeProvider:
        forget_clients()  # litellm caches clients per process, and circuits remember failures; start clean
        server = FakeProvider(script).__enter__()
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        started.append(server)
        return server

    yield start
    for server in started:
        server.__exit__(None, None, None)
    forget_clients()


@pytest.hookimpl(optionalhook=True)  # pytest-xdist's hook: without the plugin (`-p no:xdist`), never called
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """`-n auto`: a worker per core and two more, since the production profile's two nights keep two workers waiting
    on the daemon, the schedule's tick and the store for most of their minutes."""
    return (os.cpu_count() or 1) + 2

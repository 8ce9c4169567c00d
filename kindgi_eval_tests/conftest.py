"""Shared fixtures: a temporary runtime folder and Dagster home, the CLI run as a real process, and fake model servers."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

import pytest

from kindgi_eval_tests.fake_provider import FakeProvider, Script

REPO = Path(__file__).resolve().parents[1]
GOLDEN = REPO / "evals" / "golden"
CLI = Path(sys.executable).parent / "kindgi-eval"


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
    for var in ("KINDGI_STORE", "EVAL_DIR", "CONFIG_DIR", "AGENT_MODEL", "AGENT_URL", "EVAL_JUDGE_MODEL", "EVAL_MAX_LATENCY_MS", "EVAL_CONCURRENCY"):
        monkeypatch.delenv(var, raising=False)
    return Home(root, root / "store", root / "dagster")


class Result(NamedTuple):
    """What a finished command left behind."""

    code: int
    out: str
    err: str


def run_cli(*args: str, cwd: Path = REPO, env: dict[str, str] | None = None) -> Result:
    """`kindgi-eval ARGS` as a separate process, in the repository by default, with the test's environment."""
    done = subprocess.run(
        [str(CLI), *args], cwd=cwd, env={**os.environ, **(env or {})}, capture_output=True, text=True, timeout=300
    )
    return Result(done.returncode, done.stdout, done.stderr)


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

"""`kindgi-eval serve` and `kindgi-eval tokens issue|list|revoke`, as real processes: exit codes and exact output."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from kindgi_eval.registry import open_store
from kindgi_eval_tests.conftest import CLI, REPO, run_cli


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """A fresh runtime folder, so the registry is the SQLite file inside it."""
    monkeypatch.setenv("KINDGI_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("KINDGI_REGISTRY_DB", raising=False)
    return {"KINDGI_HOME": str(tmp_path / "home")}


def test_tokens_issue_prints_the_secret_once_and_keeps_its_hash(env, tmp_path: Path) -> None:
    done = run_cli("tokens", "issue", "--tenant", "acme", "--name", "ci")
    assert done.code == 0, done.err
    secret = done.out.strip()
    assert secret.startswith("kgi_") and len(secret) == 47 and done.out == secret + "\n"
    assert (
        done.err.startswith("issued tok_")
        and "for tenant acme (ci), scope publish;" in done.err
        and "shown only now" in done.err
    )
    database = tmp_path / "home" / "registry.sqlite"
    assert secret.encode() not in database.read_bytes()
    assert open_store(f"sqlite:///{database}").authenticate(secret).tenant == "acme"


def test_tokens_list_and_revoke(env) -> None:
    first = run_cli("tokens", "issue", "--tenant", "acme", "--name", "ci")
    run_cli("tokens", "issue", "--tenant", "globex")
    listed = json.loads(run_cli("tokens", "list", "--format", "json").out)
    assert [(t["tenant"], t["name"], t["last_used"], t["revoked"]) for t in listed] == [
        ("acme", "ci", None, None),
        ("globex", "", None, None),
    ]
    assert first.out.strip() not in json.dumps(listed)
    table = run_cli("tokens", "list").out.splitlines()
    assert (
        table[0].split() == ["id", "tenant", "name", "scope", "created", "expires", "last_used", "revoked"]
        and table[-1] == "(2 rows)"
    )
    token_id = listed[0]["id"]
    revoked = run_cli("tokens", "revoke", token_id)
    assert revoked.code == 0 and revoked.out.startswith(f"revoked {token_id} (tenant acme) at ")
    assert json.loads(run_cli("tokens", "list", "--format", "json").out)[0]["revoked"] is not None


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (
            ["tokens", "issue", "--tenant", "Acme Inc"],
            "error: tenant: 'Acme Inc' is not lowercase letters, digits and hyphens. Write it like 'demo-academy'.\n",
        ),
        (
            ["tokens", "revoke", "tok_nope"],
            "error: tok_nope: no token has this id. List them with: kindgi-eval tokens list\n",
        ),
    ],
)
def test_token_mistakes_exit_2_with_one_line(env, args: list[str], said: str) -> None:
    done = run_cli(*args)
    assert (done.code, done.out, done.err) == (2, "", said)


def test_a_bad_registry_database_exits_2(env) -> None:
    done = run_cli("tokens", "list", env={"KINDGI_REGISTRY_DB": "postgresql://kindgi:pw@127.0.0.1:1/none"})
    assert done.code == 2 and done.out == "" and "Traceback" not in done.err
    assert done.err.startswith(
        "error: KINDGI_REGISTRY_DB=postgresql://kindgi:***@127.0.0.1:1/none: cannot open the registry database:"
    )


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_serve_answers_on_its_port_until_stopped(env) -> None:
    secret = run_cli("tokens", "issue", "--tenant", "acme").out.strip()
    port = _free_port()
    server = subprocess.Popen(
        [str(CLI), "serve", "--port", str(port)],
        cwd=REPO,
        env={**os.environ, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                health = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1)
                break
            except httpx.TransportError:
                assert server.poll() is None and time.monotonic() < deadline, (
                    server.stderr.read() if server.stderr else ""
                )
                time.sleep(0.1)
        assert health.json() == {"status": "ok"}
        listed = httpx.get(f"http://127.0.0.1:{port}/v1/eval-suites", headers={"Authorization": f"Bearer {secret}"})
        assert listed.json() == {"data": [], "next": None}
        busy = run_cli("serve", "--port", str(port))  # the port is taken: an input error, not a traceback
        assert busy.code == 2 and f"127.0.0.1:{port}: cannot listen there" in busy.err and "Traceback" not in busy.err
    finally:
        server.send_signal(signal.SIGINT)
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
    said = server.stderr.read()
    assert server.returncode == 0, said
    assert f"suite registry on http://127.0.0.1:{port}" in said

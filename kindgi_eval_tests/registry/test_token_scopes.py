"""Scoped, expiring tokens, through the real command line and a real server: a read token lists, shows and pulls but
cannot publish (403 naming its scope), an expired token is refused (401), and `tokens list` shows scope and expiry."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from kindgi_eval.kinds import consumers
from kindgi_eval.registry import lifetime, open_store, running_server
from kindgi_eval_tests.conftest import GOLDEN, run_cli


@pytest.fixture
def home_registry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A runtime folder whose registry database `tokens` commands write and a server on a free port serves."""
    monkeypatch.setenv("KINDGI_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("KINDGI_REGISTRY_DB", raising=False)
    store = open_store(f"sqlite:///{tmp_path / 'home' / 'registry.sqlite'}")
    try:
        with running_server(store, consumers(), port=0) as server:
            monkeypatch.setenv("KINDGI_REGISTRY_URL", server.url)
            yield server.url
    finally:
        store.close()


def issued(*args: str) -> str:
    done = run_cli("tokens", "issue", "--tenant", "acme", *args)
    assert done.code == 0, done.err
    return done.out.strip()


def test_a_read_token_lists_shows_and_pulls_but_cannot_publish(home_registry, tmp_path: Path) -> None:
    publisher, reader = issued("--name", "ci"), issued("--name", "nightly", "--scope", "read")
    published = run_cli("suites", "publish", str(GOLDEN), "--id", "acme.golden", "--version", "1.0.0", env={"KINDGI_REGISTRY_TOKEN": publisher})
    assert published.code == 0, published.err
    as_reader = {"KINDGI_REGISTRY_TOKEN": reader}
    assert "acme.golden" in run_cli("suites", "list", env=as_reader).out
    assert json.loads(run_cli("suites", "show", "acme.golden", env=as_reader).out)["suite"]["version"] == "1.0.0"
    assert run_cli("suites", "pull", "acme.golden", str(tmp_path / "pulled"), env=as_reader).code == 0
    refused = run_cli("suites", "publish", str(GOLDEN), "--id", "acme.golden", "--version", "1.1.0", env=as_reader)
    assert refused.code == 2 and "HTTP 403" in refused.err and "has scope 'read': it lists, shows and pulls suites, and cannot publish" in refused.err
    assert "1.1.0" not in run_cli("suites", "list", env=as_reader).out


def test_a_read_token_may_not_give_a_version_its_files_either(home_registry) -> None:
    import httpx

    publisher, reader = issued(), issued("--scope", "read")
    assert run_cli("suites", "publish", str(GOLDEN), "--id", "acme.golden", "--version", "1.0.0", env={"KINDGI_REGISTRY_TOKEN": publisher}).code == 0
    answer = httpx.put(f"{home_registry}/v1/eval-suites/acme.golden/versions/1.0.0/files", json={"files": {}},
                       headers={"Authorization": f"Bearer {reader}"})
    assert answer.status_code == 403 and answer.json()["error"]["code"] == "forbidden"


def test_an_expired_token_is_refused_401_and_listed_with_its_expiry(home_registry, tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'home' / 'registry.sqlite'}")
    brief = store.issue_token("acme", "brief", "read", timedelta(seconds=8))  # long enough for one command to start
    store.close()
    assert run_cli("suites", "list", env={"KINDGI_REGISTRY_TOKEN": brief.secret}).code == 0
    expiry = datetime.fromisoformat(brief.expires_at.replace("Z", "+00:00"))
    time.sleep(max(0.0, (expiry - datetime.now(UTC)).total_seconds() + 0.1))
    refused = run_cli("suites", "list", env={"KINDGI_REGISTRY_TOKEN": brief.secret})
    assert refused.code == 2 and "HTTP 401" in refused.err and f"token {brief.id} expired at {brief.expires_at}" in refused.err
    (listed,) = json.loads(run_cli("tokens", "list", "--format", "json").out)
    assert (listed["scope"], listed["expires"]) == ("read", brief.expires_at) and listed["last_used"] is not None


def test_expires_in_sets_the_expiry_and_a_bad_lifetime_is_one_line(home_registry) -> None:
    done = run_cli("tokens", "issue", "--tenant", "acme", "--scope", "read", "--expires-in", "90d")
    assert done.code == 0 and "scope read, until 20" in done.err
    (listed,) = json.loads(run_cli("tokens", "list", "--format", "json").out)
    assert listed["expires"] > listed["created"] and listed["scope"] == "read"
    bad = run_cli("tokens", "issue", "--tenant", "acme", "--expires-in", "soon")
    assert (bad.code, bad.out) == (2, "") and bad.err == ("error: --expires-in: 'soon' is not a lifetime. Write a whole number and "
                                                          "a unit: 30m, 12h, 90d or 2w.\n")


@pytest.mark.parametrize(("text", "lives"), [("30m", timedelta(minutes=30)), ("12h", timedelta(hours=12)),
                                             ("90d", timedelta(days=90)), ("2w", timedelta(weeks=2))])
def test_a_lifetime_is_a_whole_number_and_a_unit(text: str, lives: timedelta) -> None:
    assert lifetime(text) == lives


@pytest.mark.parametrize("text", ["", "0d", "-1d", "1.5h", "90", "d", "1y", "10000000d"])
def test_anything_else_is_not_a_lifetime(text: str) -> None:
    with pytest.raises(ValueError, match="is not a lifetime"):
        lifetime(text)

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
    published = run_cli(
        "suites",
        "publish",
        str(GOLDEN),
        "--id",
        "acme.golden",
        "--version",
        "1.0.0",
        env={"KINDGI_REGISTRY_TOKEN": publisher},
    )
    assert published.code == 0, published.err
    as_reader = {"KINDGI_REGISTRY_TOKEN": reader}
    assert "acme.golden" in run_cli("suites", "list", env=as_reader).out
    assert json.loads(run_cli("suites", "show", "acme.golden", env=as_reader).out)["suite"]["version"] == "1.0.0"
    assert run_cli("suites", "pull", "acme.golden", str(tmp_path / "pulled"), env=as_reader).code == 0
    refused = run_cli("suites", "publish", str(GOLDEN), "--id", "acme.golden", "--version", "1.1.0", env=as_reader)
    assert (
        refused.code == 2
        and "HTTP 403" in refused.err
        and "has scope 'read': it lists, shows and pulls suites, and cannot publish" in refused.err
    )
    assert "1.1.0" not in run_cli("suites", "list", env=as_reader).out


def test_a_read_token_may_not_give_a_version_its_files_either(home_registry) -> None:
    import httpx

    publisher, reader = issued(), issued("--scope", "read")
    assert (
        run_cli(
            "suites",
            "publish",
            str(GOLDEN),
            "--id",
            "acme.golden",
            "--version",
            "1.0.0",
            env={"KINDGI_REGISTRY_TOKEN": publisher},
        ).code
        == 0
    )
    answer = httpx.put(
        f"{home_registry}/v1/eval-suites/acme.golden/versions/1.0.0/files",
        json={"files": {}},
        headers={"Authorization": f"Bearer {reader}"},
    )
    assert answer.status_code == 403 and answer.json()["error"]["code"] == "forbidden"


def test_an_expired_token_is_refused_401_and_listed_with_its_expiry(home_registry, tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'home' / 'registry.sqlite'}")
    brief = store.issue_token("acme", "brief", "read", timedelta(seconds=8))  # long enough for one command to start
    store.close()
    assert run_cli("suites", "list", env={"KINDGI_REGISTRY_TOKEN": brief.secret}).code == 0
    expiry = datetime.fromisoformat(brief.expires_at.replace("Z", "+00:00"))
    time.sleep(max(0.0, (expiry - datetime.now(UTC)).total_seconds() + 0.1))
    refused = run_cli("suites", "list", env={"KINDGI_REGISTRY_TOKEN": brief.secret})
    assert (
        refused.code == 2
        and "HTTP 401" in refused.err
        and f"token {brief.id} expired at {brief.expires_at}" in refused.err
    )
    (listed,) = json.loads(run_cli("tokens", "list", "--format", "json").out)
    assert (listed["scope"], listed["expires"]) == ("read", brief.expires_at) and listed["last_used"] is not None


def test_expires_in_sets_the_expiry_and_a_bad_lifetime_is_one_line(home_registry) -> None:
    done = run_cli("tokens", "issue", "--tenant", "acme", "--scope", "read", "--expires-in", "90d")
    assert done.code == 0 and "scope read, until 20" in done.err
    (listed,) = json.loads(run_cli("tokens", "list", "--format", "json").out)
    assert listed["expires"] > listed["created"] and listed["scope"] == "read"
    bad = run_cli("tokens", "issue", "--tenant", "acme", "--expires-in", "soon")
    assert (bad.code, bad.out) == (2, "") and bad.err == (
        "error: --expires-in: 'soon' is not a lifetime. Write a whole number and a unit: 30m, 12h, 90d or 2w.\n"
    )


@pytest.mark.parametrize(
    ("text", "lives"),
    [
        ("30m", timedelta(minutes=30)),
        ("12h", timedelta(hours=12)),
        ("90d", timedelta(days=90)),
        ("2w", timedelta(weeks=2)),
    ],
)
def test_a_lifetime_is_a_whole_number_and_a_unit(text: str, lives: timedelta) -> None:
    assert lifetime(text) == lives


@pytest.mark.parametrize("text", ["", "0d", "-1d", "1.5h", "90", "d", "1y", "10000000d"])
def test_anything_else_is_not_a_lifetime(text: str) -> None:
    with pytest.raises(ValueError, match="is not a lifetime"):
        lifetime(text)


def test_a_nightly_token_reads_every_tenants_suites_naming_each_and_publishes_nothing(
    home_registry, tmp_path: Path
) -> None:
    import httpx

    from kindgi_eval.registry import RegistryClient

    for tenant in ("acme", "globex"):
        publisher = run_cli("tokens", "issue", "--tenant", tenant).out.strip()
        published = run_cli(
            "suites",
            "publish",
            str(GOLDEN),
            "--id",
            f"{tenant}.golden",
            "--version",
            "1.0.0",
            env={"KINDGI_REGISTRY_TOKEN": publisher},
        )
        assert published.code == 0, published.err
    done = run_cli("tokens", "issue", "--scope", "nightly", "--name", "night")
    assert done.code == 0 and "for every tenant's suites (night), scope nightly" in done.err
    nightly, acme = done.out.strip(), issued("--scope", "read")

    def get(secret: str, path: str, **params: str) -> httpx.Response:
        return httpx.get(f"{home_registry}{path}", params=params, headers={"Authorization": f"Bearer {secret}"})

    # the nightly token reads both tenants' suites, each request naming the tenant; the run's client names it
    for tenant in ("acme", "globex"):
        latest = get(nightly, f"/v1/eval-suites/{tenant}.golden", tenant=tenant)
        assert latest.status_code == 200 and latest.json()["suite"]["tenantId"] == tenant
        assert get(nightly, f"/v1/eval-suites/{tenant}.golden/versions/1.0.0", tenant=tenant).status_code == 200
        assert [
            v["version"]
            for v in get(nightly, f"/v1/eval-suites/{tenant}.golden/versions", tenant=tenant).json()["data"]
        ] == ["1.0.0"]
        assert [s["id"] for s in get(nightly, "/v1/eval-suites", tenant=tenant).json()["data"]] == [f"{tenant}.golden"]
        found = RegistryClient(home_registry, nightly).find_suite(f"{tenant}.golden", tenant=tenant)
        assert found is not None and found["suite"]["tenantId"] == tenant
    # naming no tenant, or another tenant's suite under a tenant, it reads nothing
    unnamed = get(nightly, "/v1/eval-suites/acme.golden")
    assert unnamed.status_code == 422 and unnamed.json()["error"]["message"].startswith(
        "tenant: required with a nightly token"
    )
    assert get(nightly, "/v1/eval-suites/acme.golden", tenant="globex").status_code == 404
    # a tenant's own token still reads its own alone, whatever tenant a read names: another's suite is none of its own
    assert get(acme, "/v1/eval-suites/acme.golden", tenant="acme").status_code == 200
    assert get(acme, "/v1/eval-suites/globex.golden", tenant="globex").status_code == 404
    assert get(acme, "/v1/eval-suites/globex.golden/versions/1.0.0", tenant="globex").status_code == 404
    assert get(acme, "/v1/eval-suites/globex.golden/versions", tenant="globex").status_code == 404
    assert get(acme, "/v1/eval-suites", tenant="globex").status_code == 403
    assert RegistryClient(home_registry, acme).find_suite("globex.golden", tenant="globex") is None
    # and the nightly token publishes nothing, neither a suite nor a catalogue entry
    refused = run_cli(
        "suites",
        "publish",
        str(GOLDEN),
        "--id",
        "acme.golden",
        "--version",
        "1.1.0",
        env={"KINDGI_REGISTRY_TOKEN": nightly},
    )
    assert refused.code == 2 and "HTTP 403" in refused.err and "has scope 'nightly'" in refused.err
    entry = httpx.post(
        f"{home_registry}/v1/catalogue",
        json={"name": "kindgi/x", "version": "1.0.0", "description": "", "files": {}},
        headers={"Authorization": f"Bearer {nightly}"},
    )
    assert entry.status_code == 403
    assert "1.1.0" not in get(nightly, "/v1/eval-suites", tenant="acme").text


def test_a_nightly_token_is_issued_for_no_tenant(home_registry) -> None:
    done = run_cli("tokens", "issue", "--scope", "nightly", "--tenant", "acme")
    assert (done.code, done.out) == (
        2,
        "",
    ) and "error: tenant: is not given to a nightly token: it acts for no tenant" in done.err

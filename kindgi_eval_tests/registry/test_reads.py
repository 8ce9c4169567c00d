"""The cheap reads (`registry/reads.py`): what is kept in memory is only ever an immutable version, so a revoke
refuses the next request and a publish is the next latest, on both backends and across processes."""

from __future__ import annotations

import uuid

import httpx

from kindgi_eval.kinds import consumers
from kindgi_eval.registry import StoredVersion, open_store, running_server
from kindgi_eval.registry.reads import KeptVersions
from kindgi_eval_tests.conftest import run_cli
from kindgi_eval_tests.registry.conftest import refused, suite


def test_a_token_revoked_by_another_process_is_refused_on_its_next_get(registry, caller) -> None:
    me = caller()
    assert me.http.post("/v1/eval-suites", json=suite(me.tenant)).status_code == 201
    assert me.http.get("/v1/eval-suites/acme.pricing").status_code == 200  # the version is now kept in memory
    database = registry.store.engine.url.render_as_string(hide_password=False)
    done = run_cli("tokens", "revoke", me.token_id, env={"KINDGI_REGISTRY_DB": database})
    assert done.code == 0, done.err
    message = refused(me.http.get("/v1/eval-suites/acme.pricing"), 401, "unauthorized")
    assert "revoked" in message and me.token_id in message
    refused(me.http.get("/v1/eval-suites/acme.pricing/versions/1.0.0"), 401, "unauthorized")


def test_a_kept_version_never_hides_a_newer_latest(registry, caller) -> None:
    me = caller()
    for version in ("1.0.0", "1.1.0"):
        assert me.http.post("/v1/eval-suites", json=suite(me.tenant, version=version)).status_code == 201
        answer = me.http.get("/v1/eval-suites/acme.pricing")
        assert answer.json()["suite"]["version"] == version
    assert me.http.get("/v1/eval-suites/acme.pricing/versions/1.0.0").json()["suite"]["version"] == "1.0.0"


def test_a_kept_version_is_its_tenants_alone(registry, caller) -> None:
    # both tenants have a suite `acme.pricing` at 1.0.0 with other content: each reads its own, also once kept
    mine, theirs = caller(), caller()
    for who, description in ((mine, "mine"), (theirs, "theirs")):
        assert who.http.post("/v1/eval-suites", json=suite(who.tenant, description=description)).status_code == 201
    for _ in range(2):
        assert mine.http.get("/v1/eval-suites/acme.pricing").json()["suite"]["description"] == "mine"
        assert theirs.http.get("/v1/eval-suites/acme.pricing/versions/1.0.0").json()["suite"]["description"] == "theirs"


def _version(name: str, size: int) -> StoredVersion:
    return StoredVersion(name, "1.0.0", "conversation", "0" * 64, "x" * size, "2026-12-01T00:00:00.000000Z", "tok_1")


def test_kept_versions_stay_within_their_bytes_dropping_the_least_recently_read() -> None:
    kept: KeptVersions[StoredVersion] = KeptVersions(max_bytes=100)
    kept.put("a", _version("a", 40), 40)
    kept.put("b", _version("b", 40), 40)
    assert kept.get("a") is not None  # a is now the most recently read, b the least
    kept.put("c", _version("c", 40), 40)  # 120 bytes: b goes
    assert kept.get("b") is None and kept.get("a") is not None and kept.get("c") is not None
    assert kept.size == 80 and len(kept) == 2
    kept.put("huge", _version("huge", 101), 101)  # over the whole budget: never kept, nothing else dropped
    assert kept.get("huge") is None and len(kept) == 2


def test_a_get_after_the_database_dropped_every_connection_is_answered(postgres_url: str) -> None:
    # PostgreSQL's alone: SQLite is a file, with no connection for a server to end
    store = open_store(postgres_url)
    token = store.issue_token(f"t-{uuid.uuid4().hex[:10]}", "test")
    try:
        # a publish is checked in a worker that starts with the server: on a busy machine its first check waits for it
        with (
            running_server(store, consumers()) as server,
            httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {token.secret}"}, timeout=60) as http,
        ):
            assert http.post("/v1/eval-suites", json=suite(token.tenant)).status_code == 201
            assert (
                http.get("/v1/eval-suites/acme.pricing").status_code == 200
            )  # the server's pools now hold connections
            with store.engine.connect() as connection:  # as a restart does: every other session of the database ends
                ended = connection.exec_driver_sql(
                    "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
                ).scalar()
            assert ended >= 1
            for _ in range(3):  # each pooled connection found gone is replaced, and the statement run again
                answer = http.get("/v1/eval-suites/acme.pricing")
                assert answer.status_code == 200, answer.text
    finally:
        store.close()

"""A registry served over real HTTP on 127.0.0.1, once per backend per session: SQLite in a temporary folder, and
PostgreSQL in a fresh database of the server .ci/run starts (skipped without one, failed in CI)."""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, NamedTuple

import httpx
import pytest
import sqlalchemy as sa

from kindgi_eval.kinds import consumers
from kindgi_eval.registry import RegistryStore, open_store, running_server
from kindgi_eval.registry.database import TABLES
from kindgi_eval_tests.conftest import GOLDEN

# The role .ci/run creates; DAGSTER_PG_* override each one, as in kindgi_eval_tests/defs/test_postgres_instance.py.
PG_DEFAULTS = {
    "DAGSTER_PG_HOST": "127.0.0.1",
    "DAGSTER_PG_PORT": "5432",
    "DAGSTER_PG_USERNAME": "kindgi",
    "DAGSTER_PG_PASSWORD": "kindgi-ci",
}


class Registry(NamedTuple):
    """A running registry: its storage, its base URL and which backend holds it."""

    store: RegistryStore
    url: str
    backend: str
    app: Any
    """The served FastAPI application, whose `state` the server keeps its counts in."""
    gate: Any
    """The bounds of the server's connections (`http_limits.ConnectionGate`), with its counts."""


class Caller(NamedTuple):
    """A tenant with a valid token, and an HTTP client that sends it."""

    tenant: str
    token_id: str
    secret: str
    http: httpx.Client


def _pg(dbname: str) -> str:
    env = {k: os.environ.get(k) or v for k, v in PG_DEFAULTS.items()}
    return (
        f"postgresql://{env['DAGSTER_PG_USERNAME']}:{env['DAGSTER_PG_PASSWORD']}@{env['DAGSTER_PG_HOST']}:"
        f"{env['DAGSTER_PG_PORT']}/{dbname}"
    )


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A fresh PostgreSQL database for this session, dropped after; skipped (failed in CI) when no server answers."""
    admin = sa.create_engine(
        _pg("postgres").replace("postgresql://", "postgresql+psycopg2://"),
        isolation_level="AUTOCOMMIT",
        connect_args={"connect_timeout": 3},
    )
    name = f"kindgi_registry_test_{uuid.uuid4().hex[:12]}"
    try:
        with admin.connect() as connection:
            connection.exec_driver_sql(f'CREATE DATABASE "{name}"')
    except (sa.exc.SQLAlchemyError, ImportError) as e:  # no server, no role, no driver
        admin.dispose()
        reason = f"no PostgreSQL server reachable at {os.environ.get('DAGSTER_PG_HOST') or '127.0.0.1'}: {str(e).strip().splitlines()[0]}"
        if os.environ.get("KINDGI_REQUIRE_POSTGRES") == "1":
            pytest.fail(f"{reason} (.ci/run starts one; see its PostgreSQL section)")
        pytest.skip(f"{reason}; .ci/run starts one, or set DAGSTER_PG_HOST/PORT/USERNAME/PASSWORD")
    try:
        yield _pg(name)
    finally:
        with admin.connect() as connection:
            connection.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.dispose()


@pytest.fixture(scope="session", params=["sqlite", "postgresql"])
def registry(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Registry]:
    """The registry on one backend, served by uvicorn in a thread on a free port of 127.0.0.1, stopped after."""
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path_factory.mktemp('registry') / 'registry.sqlite'}"
    else:
        url = request.getfixturevalue("postgres_url")
    store = open_store(url)
    try:
        with running_server(store, consumers()) as server:
            yield Registry(store, server.url, request.param, server.server.config.app, server.gate)
    finally:
        store.close()


@pytest.fixture
def caller(registry: Registry) -> Iterator[Callable[..., Caller]]:
    """Make tenants, each new (so tests share a server without sharing suites), with a token and a client."""
    clients: list[httpx.Client] = []

    def make(tenant: str | None = None) -> Caller:
        name = tenant or f"t-{uuid.uuid4().hex[:10]}"
        token = registry.store.issue_token(name, "test")
        http = httpx.Client(base_url=registry.url, headers={"Authorization": f"Bearer {token.secret}"}, timeout=30)
        clients.append(http)
        return Caller(name, token.id, token.secret, http)

    yield make
    for http in clients:
        http.close()


class EmptyCatalogue:
    """A catalogue that holds nothing, for a kind's pure code that never looks in one."""

    def catalogue_entry(self, name: str, version: str) -> None:
        return None

    def catalogue_entries(self) -> list:
        return []


def golden_spec() -> dict[str, Any]:
    """The committed golden suite as a conversation spec: its files' lines as the two lists."""

    def lines(name: str) -> list[Any]:
        return [json.loads(line) for line in (GOLDEN / name).read_text().splitlines() if line.strip()]

    return {"cases": lines("cases.jsonl"), "calibration": lines("calibration.jsonl")}


def suite(tenant: str, suite_id: str = "acme.pricing", version: str = "1.0.0", **fields: Any) -> dict[str, Any]:
    """A valid conversation suite document; `fields` replace or add fields."""
    document = {
        "id": suite_id,
        "tenantId": tenant,
        "version": version,
        "kind": "conversation",
        "description": "Pricing questions",
        "spec": {
            "cases": [{"id": "price", "text": "How much is it?", "expect": {"escalate": False}, "must_contain": ["€"]}]
        },
    }
    return {**document, **fields}


def rows(store: RegistryStore) -> bytes:
    """Every stored row of every table, as bytes; a token's `last_used_at` aside (using a token is recorded)."""
    found = {}
    with store.engine.connect() as connection:
        for table in TABLES:
            columns = [c for c in table.c if c.name != "last_used_at"]
            query = sa.select(*columns).order_by(*table.primary_key.columns)
            found[table.name] = [list(row) for row in connection.execute(query)]
    return json.dumps(found, sort_keys=True, ensure_ascii=False).encode("utf-8")


@contextmanager
def unchanged(store: RegistryStore) -> Iterator[None]:
    """The block must leave every stored row byte for byte as it was."""
    before = rows(store)
    yield
    assert rows(store) == before


def refused(response: httpx.Response, status: int, code: str) -> str:
    """The response is the error body with this status and code; its message, for the test to read."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message"}, body
    assert body["error"]["code"] == code
    return body["error"]["message"]

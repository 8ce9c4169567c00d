"""The command line's shared fixtures: the registry of the test's runtime folder, served over real HTTP."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import NamedTuple

import httpx
import pytest

from kindgi_eval.kinds import consumers
from kindgi_eval.registry import database_url, open_store, running_server
from kindgi_eval_tests.conftest import run_cli

TENANT = "demo-academy"  # the packaged demo tenant the runs evaluate against


class Registry(NamedTuple):
    http: httpx.Client
    other: httpx.Client
    """A client of another tenant."""


@pytest.fixture
def registry(home) -> Iterator[Registry]:
    """The registry of the test's runtime folder, served on 127.0.0.1, with a token of the demo tenant and one of another."""
    store = open_store(database_url(home.root))
    mine, theirs = store.issue_token(TENANT, "test"), store.issue_token("globex", "test")
    with running_server(store, consumers()) as server:
        http = httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {mine.secret}"}, timeout=30)
        other = httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {theirs.secret}"}, timeout=30)
        yield Registry(http, other)
        http.close()
        other.close()
    store.close()


def publish(
    client: httpx.Client, suite_id: str, kind: str, spec: dict, version: str = "1.0.0", tenant: str = TENANT
) -> None:
    document = {"id": suite_id, "tenantId": tenant, "version": version, "kind": kind, "description": "", "spec": spec}
    response = client.post("/v1/eval-suites", json=document)
    assert response.status_code == 201, response.text


def sql(query: str) -> list[dict]:
    done = run_cli("sql", query, "--format", "json")
    assert done.code == 0, done.err
    return json.loads(done.out)


def kind_figures(home, asset: str, run_id: str, names: tuple[str, ...], view: str) -> tuple[dict, dict]:
    """The figures `names` as `asset` recorded them in its metadata in run `run_id`, and as that run's row of its
    kind's view holds them: a kind's figures are the same numbers under the same names in both."""
    import dagster as dg

    from kindgi_eval.defs import open_instance

    instance = open_instance(home.root)
    try:
        (record,) = instance.fetch_materializations(dg.AssetKey(asset), limit=1).records
        assert record.run_id == run_id
        metadata = record.asset_materialization.metadata
    finally:
        instance.dispose()
    (row,) = sql(f"SELECT * FROM {view} WHERE run_id = '{run_id}'")
    return {name: metadata[name].value for name in names}, {name: row[name] for name in names}

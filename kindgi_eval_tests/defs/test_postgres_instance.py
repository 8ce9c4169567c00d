"""The production instance (deploy/dagster-postgres.yaml) against a real PostgreSQL server on 127.0.0.1, through the
production profile's PgBouncer (deploy/production.py)."""

from __future__ import annotations

import os
import shutil
import sys
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime

import dagster as dg
import pytest

from kindgi_eval.defs.runs import open_instance
from kindgi_eval.inputs.tenants_file import TENANTS_ENV
from kindgi_eval_tests.conftest import REPO

CONFIG = REPO / "deploy" / "dagster-postgres.yaml"
sys.path.insert(0, str(REPO / "deploy"))
import production  # noqa: E402 - the profile's own script, for its pooler

KEY = "demo-academy.golden"
# What .ci/run creates; DAGSTER_PG_* override each one.
DEFAULTS = {
    "DAGSTER_PG_HOST": "127.0.0.1",
    "DAGSTER_PG_PORT": "5432",
    "DAGSTER_PG_USERNAME": "kindgi",
    "DAGSTER_PG_PASSWORD": "kindgi-ci",
}


def _connect(dbname: str):
    import psycopg2

    env = {k: os.environ.get(k) or v for k, v in DEFAULTS.items()}
    return psycopg2.connect(
        host=env["DAGSTER_PG_HOST"],
        port=int(env["DAGSTER_PG_PORT"]),
        user=env["DAGSTER_PG_USERNAME"],
        password=env["DAGSTER_PG_PASSWORD"],
        dbname=dbname,
        connect_timeout=3,
    )


@pytest.fixture
def database(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A fresh database for this test, dropped after; skipped (failed in CI) when no server answers."""
    try:
        admin = _connect("postgres")
    except Exception as e:  # psycopg2.OperationalError, or no psycopg2 at all
        reason = (
            f"no PostgreSQL server reachable at {os.environ.get('DAGSTER_PG_HOST') or '127.0.0.1'}: {str(e).strip()}"
        )
        if os.environ.get("KINDGI_REQUIRE_POSTGRES") == "1":
            pytest.fail(f"{reason} (.ci/run starts one; see its PostgreSQL section)")
        pytest.skip(f"{reason}; .ci/run starts one, or set DAGSTER_PG_HOST/PORT/USERNAME/PASSWORD")
    name = f"kindgi_test_{uuid.uuid4().hex[:12]}"
    admin.autocommit = True
    with admin.cursor() as cursor:
        cursor.execute(f'CREATE DATABASE "{name}"')
    for var, value in DEFAULTS.items():
        monkeypatch.setenv(var, os.environ.get(var) or value)
    monkeypatch.setenv("DAGSTER_PG_DB", name)
    try:
        yield name
    finally:
        with admin.cursor() as cursor:
            cursor.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.close()


@pytest.fixture
def pooled(database: str, tmp_path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    """The profile's PgBouncer in front of the test's database, DAGSTER_PG_HOST/PORT pointing at it; stopped after."""
    if shutil.which("pgbouncer", path=os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin"])) is None:
        if os.environ.get("KINDGI_REQUIRE_POSTGRES") == "1":
            pytest.fail("no pgbouncer (.ci/run installs Debian's)")
        pytest.skip("no pgbouncer: apt-get install pgbouncer")
    profile = production.Profile(tmp_path / "profile")
    profile.logs.mkdir(parents=True)
    server = {var: os.environ[var] for var in (*DEFAULTS, "DAGSTER_PG_DB")}
    try:
        found = production.pooler(profile, server)
        for var, value in found.items():
            monkeypatch.setenv(var, value)
        yield server | found
    finally:
        production.terminate(profile.state["pids"])


def _pooler(pooled: dict[str, str], command: str) -> list[dict]:
    """`command` on the pooler's console (its `pgbouncer` database), each row by its column names."""
    import psycopg2

    console = psycopg2.connect(
        host=pooled["DAGSTER_PG_HOST"],
        port=int(pooled["DAGSTER_PG_PORT"]),
        user=pooled["DAGSTER_PG_USERNAME"],
        password=pooled["DAGSTER_PG_PASSWORD"],
        dbname="pgbouncer",
    )
    console.autocommit = True  # the console takes no transactions
    try:
        with console.cursor() as cursor:
            cursor.execute(command)
            names = [column[0] for column in cursor.description]
            return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
    finally:
        console.close()


def test_runs_schedules_and_checks_are_kept_in_postgres(
    home, database: str, pooled: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from dagster_postgres import PostgresEventLogStorage, PostgresRunStorage, PostgresScheduleStorage

    from kindgi_eval.defs.definitions import defs

    monkeypatch.delenv(TENANTS_ENV, raising=False)
    monkeypatch.chdir(REPO)  # the built-in default: the demo tenant's golden suite
    home.dagster.mkdir(parents=True)
    shutil.copyfile(CONFIG, home.dagster / "dagster.yaml")
    instance = open_instance(home.root)
    try:
        assert isinstance(instance.run_storage, PostgresRunStorage)
        # Dagster opens a connection per query; through the pooler, consecutive ones reach the same server process
        # (straight to PostgreSQL, each would be a new one)
        for store in (instance.run_storage, instance.schedule_storage):
            backends = set()
            for _ in range(3):
                with store.connect() as connection:
                    backends.add(connection.exec_driver_sql("SELECT pg_backend_pid()").scalar())
            assert len(backends) == 1, store
        assert isinstance(instance.event_log_storage, PostgresEventLogStorage)
        assert isinstance(instance.schedule_storage, PostgresScheduleStorage)
        assert type(instance.run_coordinator).__name__ == "QueuedRunCoordinator"

        night = datetime(2026, 12, 1, 2, tzinfo=UTC)
        tick = defs.resolve_schedule_def("nightly_suites")(
            dg.build_schedule_context(instance=instance, scheduled_execution_time=night)
        )
        (request,) = list(tick)  # the schedule registers the partition in PostgreSQL before requesting its run
        assert request.partition_key == KEY and instance.get_dynamic_partitions("suites") == [KEY]

        result = defs.resolve_job_def("evaluate_suite").execute_in_process(
            instance=instance, partition_key=KEY, tags=request.tags
        )
        assert result.success
        record = instance.get_run_record_by_id(result.run_id)
        assert record.dagster_run.status == dg.DagsterRunStatus.SUCCESS
        assert record.dagster_run.tags["kindgi/tenant"] == "demo-academy"
        latest = instance.fetch_materializations(
            dg.AssetRecordsFilter(asset_key=dg.AssetKey("statuses"), asset_partitions=[KEY]), limit=1
        ).records
        assert latest[0].run_id == result.run_id
        history = instance.event_log_storage.get_asset_check_execution_history(
            dg.AssetCheckKey(dg.AssetKey("statuses"), "no_failing_cases"), limit=5
        )
        assert [h.run_id for h in history] == [result.run_id]
        # the run's queries all went through the pooler, on no more server connections than it keeps
        (pool,) = [row for row in _pooler(pooled, "SHOW POOLS") if row["database"] == database]
        assert pool["pool_mode"] == "session"
        assert 1 <= pool["sv_active"] + pool["sv_idle"] + pool["sv_used"] <= production.POOLER_SERVER_CONNECTIONS
        (stats,) = [row for row in _pooler(pooled, "SHOW STATS") if row["database"] == database]
        assert stats["total_xact_count"] > 100, stats
    finally:
        instance.dispose()

    with _connect(database) as connection, connection.cursor() as cursor:  # it is PostgreSQL that holds them
        cursor.execute("SELECT run_id, status FROM runs")
        assert cursor.fetchall() == [(result.run_id, "SUCCESS")]
        cursor.execute("SELECT partition FROM dynamic_partitions WHERE partitions_def_name = 'suites'")
        assert cursor.fetchall() == [(KEY,)]

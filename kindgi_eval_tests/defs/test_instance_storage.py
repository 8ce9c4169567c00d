"""The packaged instance's SQLite storage: Dagster's files, each event log database kept open by the process that
uses it, every event committed as it is stored, and the Dagster release it was written against."""

from __future__ import annotations

import logging
import subprocess
import sys
import time
from pathlib import Path

import dagster as dg
from dagster._core.events.log import EventLogEntry
from sqlalchemy import create_engine
from sqlalchemy.pool import StaticPool

from kindgi_eval.defs import instance_storage, open_instance
from kindgi_eval.defs.instance_storage import KEPT_DATABASES, KeptSqliteEventLogStorage


def _entry(run_id: str, message: str) -> EventLogEntry:
    return EventLogEntry(
        error_info=None, level=logging.INFO, user_message=message, run_id=run_id, timestamp=time.time()
    )


def _messages(storage, run_id: str) -> list[str]:
    return [e.user_message for e in storage.get_logs_for_run(run_id)]


def test_a_new_instance_keeps_its_event_logs_open_and_opens_without_dagster_home(home, monkeypatch) -> None:
    monkeypatch.delenv("DAGSTER_HOME")
    instance = open_instance(home.root)
    try:
        assert isinstance(instance.event_log_storage, KeptSqliteEventLogStorage)
        instance.event_log_storage.store_event(_entry("run-a", "stored"))
    finally:
        instance.dispose()
    monkeypatch.delenv("DAGSTER_HOME")  # open_instance set it; the copied dagster.yaml names its folder itself
    with dg.DagsterInstance.from_config(str(home.dagster)) as again:
        assert _messages(again.event_log_storage, "run-a") == ["stored"]
    # the files are Dagster's own: `storage: sqlite` over the same folder reads them
    plain = home.root / "plain"
    plain.mkdir()
    (plain / "dagster.yaml").write_text(f"storage:\n  sqlite:\n    base_dir: {home.dagster}\n")
    with dg.DagsterInstance.from_config(str(plain)) as other:
        assert type(other.event_log_storage).__name__ == "SqliteEventLogStorage"
        assert _messages(other.event_log_storage, "run-a") == ["stored"]


def test_more_runs_than_it_keeps_open_lose_no_event(tmp_path: Path) -> None:
    storage = KeptSqliteEventLogStorage(str(tmp_path))
    runs = [f"run-{n:02d}" for n in range(KEPT_DATABASES + 4)]
    for round_ in range(2):  # the second round reopens the databases the first one had to close
        for run_id in runs:
            storage.store_event(_entry(run_id, f"{run_id} #{round_}"))
    assert len(storage._engines) == KEPT_DATABASES
    assert all(_messages(storage, r) == [f"{r} #0", f"{r} #1"] for r in runs)
    storage.dispose()


def test_each_event_is_committed_as_it_is_stored(tmp_path: Path) -> None:
    # another process reads what this one stored while this one still holds the database open
    storage = KeptSqliteEventLogStorage(str(tmp_path))
    storage.store_event(_entry("run-a", "before the reader"))
    reader = (
        "import sys; from dagster._core.storage.event_log import SqliteEventLogStorage; "
        "print([e.user_message for e in SqliteEventLogStorage(sys.argv[1]).get_logs_for_run('run-a')])"
    )
    done = subprocess.run([sys.executable, "-c", reader, str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == "['before the reader']", done.stderr
    storage.dispose()


def test_a_wipe_closes_the_databases_it_deletes(tmp_path: Path) -> None:
    storage = KeptSqliteEventLogStorage(str(tmp_path))
    storage.store_event(_entry("run-a", "old"))
    storage.wipe()
    assert _messages(storage, "run-a") == []
    storage.store_event(_entry("run-a", "new"))  # written to a new file, not to the deleted one still open
    assert _messages(KeptSqliteEventLogStorage(str(tmp_path)), "run-a") == ["new"]
    storage.dispose()


def test_a_partition_deleted_is_seen_gone_at_once_here_and_within_seconds_elsewhere(
    tmp_path: Path, monkeypatch
) -> None:
    here, elsewhere = KeptSqliteEventLogStorage(str(tmp_path)), KeptSqliteEventLogStorage(str(tmp_path))
    here.add_dynamic_partitions("suites", ["a.one", "a.two"])
    assert here.has_dynamic_partition("suites", "a.one") and elsewhere.has_dynamic_partition("suites", "a.two")
    here.delete_dynamic_partition("suites", "a.one")
    assert not here.has_dynamic_partition("suites", "a.one")
    here.delete_dynamic_partition("suites", "a.two")
    assert elsewhere.has_dynamic_partition("suites", "a.two")  # still taken to exist for PARTITION_SEEN_S
    monkeypatch.setattr(instance_storage, "PARTITION_SEEN_S", 0.0)
    assert not elsewhere.has_dynamic_partition("suites", "a.two")
    assert not elsewhere.has_dynamic_partition("suites", "never-added")
    here.dispose()
    elsewhere.dispose()


def test_a_commit_does_not_wait_for_the_disk_but_survives_the_process_killed(tmp_path: Path) -> None:
    # each database is in WAL mode with synchronous NORMAL (1): a commit is written to the log, not waited for on disk
    storage = KeptSqliteEventLogStorage(str(tmp_path))
    storage.store_event(_entry("run-a", "stored"))
    for shard in ("run-a", "index"):
        with storage._engine(shard).connect() as connection:
            assert connection.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
            assert connection.exec_driver_sql("PRAGMA synchronous").scalar() == 1
    storage.dispose()
    # a process SIGKILLed right after its commits leaves every one of them to the next reader
    writer = (
        "import logging, os, signal, sys, time\n"
        "from dagster._core.events.log import EventLogEntry\n"
        "from kindgi_eval.defs.instance_storage import KeptSqliteEventLogStorage\n"
        "storage = KeptSqliteEventLogStorage(sys.argv[1])\n"
        "for n in range(20):\n"
        "    storage.store_event(EventLogEntry(error_info=None, level=logging.INFO, user_message=f'event {n}', run_id='run-b', timestamp=time.time()))\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    done = subprocess.run([sys.executable, "-c", writer, str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert done.returncode == -9, done.stderr
    assert _messages(KeptSqliteEventLogStorage(str(tmp_path)), "run-b") == [f"event {n}" for n in range(20)]


def test_a_database_not_in_wal_mode_keeps_sqlites_default(tmp_path: Path) -> None:
    # a rollback journal needs every commit on disk (FULL, 2) to keep the database whole through a power loss
    import sqlite3

    sqlite3.connect(tmp_path / "old.db").execute("PRAGMA journal_mode=DELETE").close()
    engine = create_engine(f"sqlite:///{tmp_path / 'old.db'}", poolclass=StaticPool)
    instance_storage._commit_without_waiting_for_the_disk(engine, new=False)
    with engine.connect() as connection:
        assert connection.exec_driver_sql("PRAGMA synchronous").scalar() == 2


def test_the_module_names_the_dagster_release_it_reaches_into_and_fails_when_that_moves_on(tmp_path: Path) -> None:
    # The kept event log overrides private parts of Dagster's SQLite event log (its `_connect`, `_db_lock`,
    # `_initdb`): a Dagster of another minor release may have moved them, so the module is re-read before it runs.
    installed = ".".join(dg.__version__.split(".")[:2])
    assert installed == instance_storage.WRITTEN_AGAINST, (
        f"kindgi_eval/defs/instance_storage.py was written against Dagster {instance_storage.WRITTEN_AGAINST} and "
        f"Dagster {dg.__version__} is installed: check its overrides against this release's SqliteEventLogStorage, "
        "then set WRITTEN_AGAINST (or switch kindgi_eval/dagster.yaml to `storage: sqlite`)."
    )
    dagsters = KeptSqliteEventLogStorage.__mro__[1]
    assert all(name in vars(dagsters) for name in ("_connect", "_initdb", "path_for_shard", "conn_string_for_shard"))
    storage = KeptSqliteEventLogStorage(str(tmp_path))
    assert hasattr(storage, "_db_lock") and isinstance(storage._initialized_dbs, set)

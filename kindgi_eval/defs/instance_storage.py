"""The SQLite storage of the packaged Dagster instance (`kindgi_eval/dagster.yaml`): Dagster's own, with each event
log database opened once per process instead of once per statement, and a partition known to exist not asked
about again for a few seconds.

Dagster's SQLite event log builds a new SQLAlchemy engine, and opens the database file, for every statement it runs.
Here the engine of each database is kept (the most recently used `KEPT_DATABASES` of them), while every statement
still runs in its own transaction and commits as before, so a killed run loses nothing it would not have lost
anyway; what that saves a run is in benchmarks/README.md. The files and their layout are Dagster's: an instance can
switch between this class and `storage: sqlite` at any time.

This is the package's one reach into Dagster's private parts (`SqliteEventLogStorage._connect`, `_db_lock`,
`_initdb`, `_initialized_dbs`), written against the Dagster release `WRITTEN_AGAINST` names; a test fails, naming this
module, when the installed Dagster is another. Touches files.
"""

from __future__ import annotations

import os
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager

from dagster._core.storage.event_log.sqlite.sqlite_event_log import SQLITE_BUSY_TIMEOUT_SECONDS, SqliteEventLogStorage
from dagster._core.storage.sqlite_storage import DagsterSqliteStorage, _event_logs_directory
from dagster._serdes import ConfigurableClassData
from sqlalchemy import create_engine
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.pool import StaticPool

WRITTEN_AGAINST = "1.13"
"""The Dagster minor release whose SQLite event log this module overrides."""
SYNCHRONOUS = "NORMAL"
"""SQLite's `synchronous` on each kept event log database in WAL mode (Dagster makes them so). A commit is then written
to the log without waiting for the disk (an fsync only when the log is checkpointed): a process killed after it loses
nothing it committed, and a machine that loses power may lose its last commits, never its database's consistency. Under FULL,
SQLite's default, every event waits for the disk."""
KEPT_DATABASES = 16
"""Event log databases (one per run, and the index) kept open by a process; the least recently used is closed."""
PARTITION_SEEN_S = 5.0
"""How long a dynamic partition found to exist is taken to exist without asking again. A run checks its partition
once per input of every step (some 60 times); a partition deleted meanwhile by another process is seen after this."""


class KeptSqliteEventLogStorage(SqliteEventLogStorage):
    """Dagster's SQLite event log, keeping one connection to each database it uses, used under the storage's lock
    (one statement of this process at a time, as Dagster's own class does)."""

    def __init__(self, base_dir: str, inst_data: ConfigurableClassData | None = None):
        self._engines: OrderedDict[str, Engine] = OrderedDict()
        self._engines_lock = threading.Lock()
        self._partitions_seen: dict[tuple[str, str], float] = {}
        super().__init__(base_dir, inst_data)

    @contextmanager
    def _connect(self, shard: str) -> Iterator[Connection]:
        with self._db_lock:
            engine = self._engine(shard)
            with engine.connect() as connection, connection.begin():
                yield connection

    def _engine(self, shard: str) -> Engine:
        with self._engines_lock:
            engine = self._engines.get(shard)
            if engine is not None:
                self._engines.move_to_end(shard)
                return engine
            new = not os.path.exists(self.path_for_shard(shard))
            engine = create_engine(
                self.conn_string_for_shard(shard),
                poolclass=StaticPool,
                connect_args={"timeout": SQLITE_BUSY_TIMEOUT_SECONDS, "check_same_thread": False},
            )
            self._engines[shard] = engine
            while len(self._engines) > KEPT_DATABASES:
                self._engines.popitem(last=False)[1].dispose()
        _commit_without_waiting_for_the_disk(engine, new)
        if shard not in self._initialized_dbs:
            self._initdb(engine)
            self._initialized_dbs.add(shard)
        return engine

    def has_dynamic_partition(self, partitions_def_name: str, partition_key: str) -> bool:
        key = (partitions_def_name, partition_key)
        seen = self._partitions_seen.get(key)
        if seen is not None and time.monotonic() - seen < PARTITION_SEEN_S:
            return True
        found = super().has_dynamic_partition(partitions_def_name, partition_key)
        if found:
            self._partitions_seen[key] = time.monotonic()
        return found

    def delete_dynamic_partition(self, partitions_def_name: str, partition_key: str) -> None:
        self._partitions_seen.pop((partitions_def_name, partition_key), None)
        super().delete_dynamic_partition(partitions_def_name, partition_key)

    def _close_all(self) -> None:
        with self._engines_lock:
            while self._engines:
                self._engines.popitem()[1].dispose()

    def wipe(self) -> None:
        """Dagster's wipe deletes the runs' database files: close them first."""
        with self._db_lock:
            self._close_all()
        super().wipe()

    def dispose(self) -> None:
        self._close_all()
        super().dispose()


def _commit_without_waiting_for_the_disk(engine: Engine, new: bool) -> None:
    """`SYNCHRONOUS` on the engine's one connection, if its database is in WAL mode; one in another mode keeps
    SQLite's default, which its rollback journal needs. A `new` database is put in WAL mode first: Dagster does so
    once it has made its tables, each of which, in a rollback journal, waits for the disk."""
    with engine.connect() as connection:
        if new:
            connection.exec_driver_sql("PRAGMA journal_mode=WAL")
        if connection.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal":
            connection.exec_driver_sql(f"PRAGMA synchronous={SYNCHRONOUS}")


class KeptSqliteStorage(DagsterSqliteStorage):
    """`storage: sqlite` with `KeptSqliteEventLogStorage` as its event log; the same `base_dir` and files."""

    def __init__(self, base_dir: str, inst_data: ConfigurableClassData | None = None):
        super().__init__(base_dir, inst_data)
        self._event_log_storage = KeptSqliteEventLogStorage(_event_logs_directory(base_dir))

    @classmethod
    def from_config_value(cls, inst_data: ConfigurableClassData, config_value) -> KeptSqliteStorage:  # type: ignore[override]
        return cls.from_local(inst_data=inst_data, **config_value)

"""The PostgreSQL storage of the production instance (`deploy/dagster-postgres.yaml`): Dagster's own, each of its
three stores keeping a connection open for the process's next query instead of opening one per query.

Dagster's PostgreSQL storage opens a new connection for every query (SQLAlchemy's `NullPool`), so that no process
holds a connection it is not using. Each is a new server process and a SCRAM handshake: 2.8 ms of the client's CPU
and 4.1 ms of the server's per query measured here, against some 0.01 ms on an open connection, and a night of
40-case runs paid about 4.5 s of PostgreSQL's CPU per run for them. Here each store keeps one connection (more while
several threads query at once, closed after use), pinged before each use, so a server restarted meanwhile costs a
new connection, not a failed query. The tables are Dagster's: an instance can switch between this class and
`storage: postgres` at any time. Touches sockets.
"""

from __future__ import annotations

import os
import weakref
from typing import Any

from dagster._serdes import ConfigurableClassData
from dagster_postgres import DagsterPostgresStorage
from dagster_postgres.utils import create_pg_engine, get_token_provider_from_config, pg_url_from_config
from sqlalchemy.engine import Engine

KEPT = 1
"""Connections each store keeps open between queries."""
OVERFLOW = 10
"""Connections a store opens beyond those while more threads query at once, each closed when its query is done."""

_engines: weakref.WeakSet[Engine] = weakref.WeakSet()


def _forget_in_child() -> None:
    """A forked child must not use its parent's connections (their sockets are shared): it opens its own."""
    for engine in list(_engines):
        engine.dispose(close=False)


os.register_at_fork(after_in_child=_forget_in_child)


def _keep_connections(store: Any) -> None:
    """Give one of Dagster's PostgreSQL stores (runs, events, schedules) an engine that keeps its connections."""
    replaced: Engine = store._engine
    options: dict[str, Any] = {
        "isolation_level": "AUTOCOMMIT",
        "pool_size": KEPT,
        "max_overflow": OVERFLOW,
        "pool_pre_ping": True,
    }
    if existing := replaced.url.query.get("options"):  # as Dagster's own pooled engine (the webserver's) passes them
        options["connect_args"] = {"options": existing}
    store._engine = create_pg_engine(store.postgres_url, store._token_provider, **options)
    _engines.add(store._engine)
    replaced.dispose()


class PooledPostgresStorage(DagsterPostgresStorage):
    """`storage: postgres` whose run, event log and schedule stores each keep a connection open (see the module)."""

    def __init__(
        self,
        postgres_url: str,
        should_autocreate_tables: bool = True,
        inst_data: ConfigurableClassData | None = None,
        token_provider: Any = None,
    ):
        super().__init__(postgres_url, should_autocreate_tables, inst_data, token_provider)
        for store in (self._run_storage, self._event_log_storage, self._schedule_storage):
            _keep_connections(store)

    @classmethod
    def from_config_value(cls, inst_data: ConfigurableClassData | None, config_value: Any) -> PooledPostgresStorage:  # type: ignore[override]
        return cls(
            inst_data=inst_data,
            postgres_url=pg_url_from_config(config_value),
            should_autocreate_tables=config_value.get("should_autocreate_tables", True),
            token_provider=get_token_provider_from_config(config_value),
        )

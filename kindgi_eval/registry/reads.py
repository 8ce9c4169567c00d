"""The registry's busiest reads made cheap: statements run on the database driver's own cursor (on PostgreSQL,
asyncpg's, awaited), and the published versions kept in memory once read.

Touches the database (a pooled connection of the store's engine). SQLAlchemy's execution layer costs several times
what the driver under it does for a statement and again for a transaction, and on PostgreSQL each statement and each
COMMIT is a round trip while the event loop waits (figures in benchmarks/README.md). A token check and a GET of a
suite's latest version are most of what the registry serves, so they skip that layer, in one statement with no
transaction around it; nothing else does.
"""

from __future__ import annotations

import asyncio
import threading
from collections import OrderedDict
from collections.abc import Hashable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, Generic, TypeVar

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from kindgi_eval.registry.errors import RegistryError

Kept = TypeVar("Kept")
POOL_SIZE = 8
"""Connections an event loop's asyncpg pool opens at most."""


class DriverQuery:
    """A SQLAlchemy Core select compiled once for one dialect, run on a driver cursor with its parameters by name."""

    def __init__(self, statement: sa.Select, dialect: sa.Dialect):
        compiled = statement.compile(dialect=dialect)
        self.sql = compiled.string
        """The SQL in the driver's own parameter style (`?` for sqlite3, `%(name)s` for psycopg2)."""
        self._order = tuple(compiled.positiontup or ()) if dialect.positional else None

    def arguments(self, values: Mapping[str, Any]) -> tuple[Any, ...] | Mapping[str, Any]:
        """The parameter values as the driver takes them: in order for a positional style, else by name."""
        return tuple(values[name] for name in self._order) if self._order is not None else values

    def first(self, cursor: Any, values: Mapping[str, Any]) -> tuple[Any, ...] | None:
        """The first row the query answers for these parameter values, or None."""
        cursor.execute(self.sql, self.arguments(values))
        return cursor.fetchone()


def _connection_lost() -> tuple[type[BaseException], ...]:
    import asyncpg

    # a connection the server ended: found closed, or left by its last statement in a state it cannot leave
    return (
        asyncpg.InterfaceError,
        asyncpg.InternalClientError,
        asyncpg.PostgresConnectionError,
        asyncpg.AdminShutdownError,
        OSError,
    )


async def _fetch_first(pool, sql: str, arguments: tuple[Any, ...]) -> tuple[Any, ...] | None:
    async with pool.acquire() as connection:
        row = await connection.fetchrow(sql, *arguments)
    return tuple(row) if row is not None else None


class AwaitedReads:
    """PostgreSQL reads awaited on the event loop that serves the request, through asyncpg: while the database
    answers, the loop serves other requests (a psycopg2 statement holds the loop for its round trips). One pool of
    connections per event loop, opened on first use and closed by `close` on that loop; a statement that finds its
    connection gone (the server restarted) is run once more on a fresh one, and every pooled connection is replaced."""

    def __init__(self, url: sa.URL, size: int = POOL_SIZE):
        self._dsn = url.set(drivername="postgresql").render_as_string(hide_password=False)
        self._size = size
        self._pools: dict[asyncio.AbstractEventLoop, asyncio.Future] = {}
        self._lost = _connection_lost()

    @staticmethod
    def query(statement: sa.Select) -> DriverQuery:
        """`statement` compiled for asyncpg (`$1` parameters)."""
        from sqlalchemy.dialects.postgresql.asyncpg import dialect

        return DriverQuery(statement, dialect())

    async def first(self, query: DriverQuery, values: Mapping[str, Any]) -> tuple[Any, ...] | None:
        """The first row `query` answers for these parameter values, or None."""
        pool = await self._pool()
        arguments = query.arguments(values)
        try:
            return await _fetch_first(pool, query.sql, arguments)
        except self._lost:
            await pool.expire_connections()  # the others are likely gone too: each is replaced as it is next taken
            return await _fetch_first(pool, query.sql, arguments)

    async def close(self) -> None:
        """Close this event loop's pool, if it opened one."""
        opening = self._pools.pop(asyncio.get_running_loop(), None)
        if opening is not None:
            await (await opening).close()

    def _pool(self) -> asyncio.Future:
        loop = asyncio.get_running_loop()
        opening = self._pools.get(loop)
        if opening is not None and opening.done() and opening.exception() is not None:
            del self._pools[loop]  # the server was not there: the next request tries again
        if loop not in self._pools:
            self._pools[loop] = loop.create_task(self._open())
        return self._pools[loop]

    async def _open(self):
        import asyncpg

        return await asyncpg.create_pool(self._dsn, min_size=1, max_size=self._size)


@contextmanager
def driver_reading(engine: Engine) -> Iterator[Any]:
    """A driver cursor on a pooled connection (PostgreSQL's pre-ping included) in autocommit: each statement is a
    transaction of its own, with no BEGIN and no COMMIT to wait for. A refusal raised inside leaves the connection
    pooled; any other error discards it."""
    connection = engine.raw_connection()
    driver = connection.driver_connection
    # psycopg2 and psycopg begin a transaction before a statement unless told not to (as SQLAlchemy's own pre-ping
    # does); the engine's sqlite3 connections never begin one themselves (database.py)
    restore = getattr(driver, "autocommit", None) is False
    try:
        if restore:
            driver.autocommit = True
        cursor = connection.cursor()
        yield cursor
        cursor.close()
        if restore:
            driver.autocommit = False
    except RegistryError:
        if restore:
            driver.autocommit = False
        raise
    except BaseException:
        connection.invalidate()
        raise
    finally:
        connection.close()


class KeptVersions(Generic[Kept]):
    """Published versions by key, the most recently read kept up to `max_bytes` of documents. A version never changes
    once published, so a kept one is never stale. Safe to share between threads."""

    def __init__(self, max_bytes: int):
        self.max_bytes = max_bytes
        """The most document bytes kept; the least recently read go first."""
        self.size = 0
        """Document bytes kept now."""
        self._kept: OrderedDict[Hashable, tuple[Kept, int]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> Kept | None:
        """The version kept under `key`, or None."""
        with self._lock:
            found = self._kept.get(key)
            if found is None:
                return None
            self._kept.move_to_end(key)
            return found[0]

    def put(self, key: Hashable, version: Kept, size: int) -> None:
        """Keep a published (committed) version, `size` bytes of document; one larger than the whole budget is not kept."""
        if size > self.max_bytes:
            return
        with self._lock:
            if key in self._kept:
                return
            self._kept[key] = (version, size)
            self.size += size
            while self.size > self.max_bytes:
                _, (_, dropped) = self._kept.popitem(last=False)
                self.size -= dropped

    def __len__(self) -> int:
        return len(self._kept)

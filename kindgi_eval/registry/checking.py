"""Where a publish's body is checked: in a process of its own, one tenant's publish at a time, so that no tenant's
suite holds the server that answers the others.

A suite's checks are CPU work (its JSON, its shape, its kind's check, RE2 compiling its patterns), and RE2 holds
Python's GIL while it compiles: in a thread of the server they would stall every other request for as long. Here they
run in `CHECK_WORKERS` worker processes, each with its own connection to the registry's database for the catalogue
a kind's check looks in. A tenant has one publish checked at a time (its others wait their turn), and a publish that
cannot start its check within `WAIT_S` is answered 503, so each publish is answered within the wait and one check's
bounded cost. Starts processes; each worker opens the registry's database.
"""

from __future__ import annotations

import asyncio
import multiprocessing
from collections.abc import Mapping
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

from kindgi_eval.registry.catalogue import Catalogue
from kindgi_eval.registry.consumers import Consumers
from kindgi_eval.registry.errors import RegistryError
from kindgi_eval.registry.model import EvalSuite
from kindgi_eval.registry.publishing import read_suite
from kindgi_eval.rules import DEFAULT_LIMITS, SuiteLimits

CHECK_WORKERS = 1
"""Worker processes that check publishes: one, so that a flood of publishes leaves the other core to the server."""
WAIT_S = 20.0
"""Seconds a publish may wait for its check to start (behind its own tenant's earlier publishes, then behind the
checks of others) before it is answered 503 `busy`: with a check's own bound, every publish is answered in 30 s."""

_worker: tuple[Consumers, Catalogue, Mapping[str, SuiteLimits]] | None = None
"""In a worker process: the consumers, the catalogue and the tenants' raised limits its checks use, set as it starts."""


def _start_worker(database_url: str, consumers: Consumers, limits: Mapping[str, SuiteLimits]) -> None:
    """A worker process's start: its own connection to the registry's database, where its checks find the catalogue."""
    from kindgi_eval.registry.storage import open_store  # the worker's own import: SQLAlchemy, in that process only

    global _worker
    _worker = (consumers, open_store(database_url), limits)


def _checked(body: bytes, tenant: str) -> EvalSuite:
    """In a worker: the suite the body holds, checked as `read_suite` checks it against the tenant's limits;
    RegistryError as it says."""
    assert _worker is not None, "a worker checks only once started"
    consumers, catalogue, limits = _worker
    return read_suite(body, tenant, consumers, catalogue, limits.get(tenant, DEFAULT_LIMITS))


def _ready() -> None:
    """In a worker: nothing; asking it starts the worker, so the first publish does not wait for its imports."""


class PublishChecks:
    """The worker processes that check publishes for one server, started with it and stopped with it."""

    def __init__(self, database_url: str, consumers: Consumers, limits: Mapping[str, SuiteLimits]) -> None:
        self._database_url, self._consumers, self._limits = database_url, consumers, limits
        self._pool: ProcessPoolExecutor | None = None
        self._places: asyncio.Semaphore | None = None
        self._turns: dict[str, tuple[asyncio.Lock, int]] = {}
        """Each tenant with publishes waiting or being checked: its turn, and how many publishes hold or await it."""

    def start(self) -> None:
        """Start the workers (on the server's event loop, as it starts serving)."""
        self._places = asyncio.Semaphore(CHECK_WORKERS)
        self._pool = self._new_pool()

    def _new_pool(self) -> ProcessPoolExecutor:
        pool = ProcessPoolExecutor(CHECK_WORKERS, mp_context=multiprocessing.get_context("spawn"), initializer=_start_worker,
                                   initargs=(self._database_url, self._consumers, self._limits))
        pool.submit(_ready)
        return pool

    async def suite(self, body: bytes, tenant: str) -> EvalSuite:
        """The suite a publish body holds, checked in a worker; RegistryError as `read_suite` says, or `busy` when its
        check could not start within `WAIT_S`."""
        assert self._pool is not None and self._places is not None, "checks run only while the server serves"
        loop = asyncio.get_running_loop()
        deadline = loop.time() + WAIT_S
        lock, waiting = self._turns.get(tenant, (asyncio.Lock(), 0))
        self._turns[tenant] = (lock, waiting + 1)
        try:
            await _within(lock.acquire(), deadline, "your tenant's earlier publishes are still being checked")
            try:
                await _within(self._places.acquire(), deadline, "other tenants' publishes are being checked")
                try:
                    return await self._run(body, tenant)
                finally:
                    self._places.release()
            finally:
                lock.release()
        finally:
            held, left = self._turns[tenant]
            if left == 1:
                del self._turns[tenant]
            else:
                self._turns[tenant] = (held, left - 1)

    async def _run(self, body: bytes, tenant: str) -> EvalSuite:
        assert self._pool is not None
        try:
            return await asyncio.get_running_loop().run_in_executor(self._pool, _checked, body, tenant)
        except BrokenProcessPool:  # the worker died (killed, out of memory): a new one serves the next publish
            self._pool.shutdown(wait=False)
            self._pool = self._new_pool()
            raise RegistryError("busy", "body: the check of this publish stopped before it ended. Retry it; if it stops "
                                "again, publish a smaller suite.") from None

    def close(self) -> None:
        """Stop the workers, leaving no check behind."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None


async def _within(acquired, deadline: float, behind: str) -> None:
    """Wait for `acquired` until `deadline` (the loop's clock); `busy` saying what it waited behind otherwise."""
    try:
        await asyncio.wait_for(acquired, max(0.0, deadline - asyncio.get_running_loop().time()))
    except TimeoutError:
        raise RegistryError("busy", f"body: not checked: {behind}, and this publish waited {WAIT_S:g} s for its turn. "
                            "Retry it in a little while.") from None

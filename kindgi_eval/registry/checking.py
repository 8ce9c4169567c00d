"""Where a publish's body is checked: in a worker process of its own, one tenant's publish at a time, so that no
tenant's suite holds the server that answers the others.

A suite's checks are CPU work (its JSON, its shape, its kind's check, RE2 compiling its patterns), and RE2 holds
Python's GIL while it compiles: in a thread of the server they would stall every other request for as long. Here they
run one at a time in a worker process, which has its own connection to the registry's database for the catalogue a
kind's check looks in. A tenant has one publish checked at a time (its others wait their turn); a publish that cannot
start its check within `WAIT_S`, or whose check runs past `CHECK_S` (the worker is then replaced), is answered 503,
so each publish is answered within their sum. Starts a process; the worker opens the registry's database.
"""

from __future__ import annotations

import asyncio
import multiprocessing
from collections.abc import Mapping
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess

from starlette.concurrency import run_in_threadpool

from kindgi_eval.registry.consumers import Consumers
from kindgi_eval.registry.errors import RegistryError
from kindgi_eval.registry.model import EvalSuite
from kindgi_eval.registry.publishing import read_suite
from kindgi_eval.rules import DEFAULT_LIMITS, SuiteLimits

WAIT_S = 20.0
"""Seconds a publish may wait for its check to start (behind its own tenant's earlier publishes, then behind the
check in progress) before it is answered 503 `busy`."""
CHECK_S = 10.0
"""Seconds one check may run: a suite's bounds keep it well under (its patterns' compile budget is 5 s); past it the
worker is stopped and replaced, and the publish answered 503. With `WAIT_S`, every publish is answered within 30 s."""
START_S = 120.0
"""Seconds a new worker may take to start (its imports, on a busy machine) before the check it was started for."""
_READY = "ready"


def _work(requests: Connection, database_url: str, consumers: Consumers, limits: Mapping[str, SuiteLimits]) -> None:
    """The worker: checks each `(body, tenant)` it is sent as `read_suite` does, against the tenant's limits, and sends
    back `(True, suite)` or `(False, the error)`, until the server closes its end."""
    from kindgi_eval.registry.storage import open_store  # SQLAlchemy, in the worker only

    catalogue = open_store(database_url)
    requests.send(_READY)
    while True:
        try:
            body, tenant = requests.recv()
        except EOFError:
            return
        try:
            requests.send((True, read_suite(body, tenant, consumers, catalogue, limits.get(tenant, DEFAULT_LIMITS))))
        except Exception as e:  # a refusal (RegistryError), or a fault, which the server answers as it would its own
            requests.send((False, e))


class PublishChecks:
    """The worker process that checks publishes for one server, started with it and stopped with it."""

    def __init__(self, database_url: str, consumers: Consumers, limits: Mapping[str, SuiteLimits]) -> None:
        self._database_url, self._consumers, self._limits = database_url, consumers, limits
        self._worker: tuple[BaseProcess, Connection] | None = None
        self._ready = False
        self._place: asyncio.Lock | None = None
        self._turns: dict[str, tuple[asyncio.Lock, int]] = {}
        """Each tenant with publishes waiting or being checked: its turn, and how many publishes hold or await it."""

    def start(self) -> None:
        """Start the worker (on the server's event loop, as it starts serving): it imports while the server serves."""
        self._place = asyncio.Lock()
        self._worker = self._new_worker()

    def _new_worker(self) -> tuple[BaseProcess, Connection]:
        context = multiprocessing.get_context("spawn")  # never a fork of the server's threads
        ours, theirs = context.Pipe()
        process = context.Process(
            target=_work,
            args=(theirs, self._database_url, self._consumers, self._limits),
            daemon=True,
            name="kindgi-publish-checks",
        )
        process.start()
        theirs.close()
        self._ready = False
        return process, ours

    async def suite(self, body: bytes, tenant: str) -> EvalSuite:
        """The suite a publish body holds, checked in the worker; RegistryError as `read_suite` says, or `busy` when its
        check could not start within `WAIT_S` or end within `CHECK_S`."""
        assert self._place is not None, "checks run only while the server serves"
        loop = asyncio.get_running_loop()
        deadline = loop.time() + WAIT_S
        lock, waiting = self._turns.get(tenant, (asyncio.Lock(), 0))
        self._turns[tenant] = (lock, waiting + 1)
        try:
            await _within(lock.acquire(), deadline, "your tenant's earlier publishes are still being checked")
            try:
                await _within(self._place.acquire(), deadline, "other tenants' publishes are being checked")
                try:
                    ok, value = await run_in_threadpool(self._check, body, tenant)
                finally:
                    self._place.release()
            finally:
                lock.release()
        finally:
            held, left = self._turns[tenant]
            if left == 1:
                del self._turns[tenant]
            else:
                self._turns[tenant] = (held, left - 1)
        if not ok:
            raise value
        return value

    def _check(self, body: bytes, tenant: str) -> tuple[bool, object]:
        """One check in the worker (in a thread, which waits without the GIL); a worker that does not answer in time,
        or is gone, is replaced and the publish answered `busy`."""
        assert self._worker is not None
        process, requests = self._worker
        try:
            if not self._ready:
                if not requests.poll(START_S) or requests.recv() != _READY:
                    raise EOFError
                self._ready = True
            requests.send((body, tenant))
            if requests.poll(CHECK_S):
                return requests.recv()
            said = f"its check ran past {CHECK_S:g} s and was stopped. Publish a smaller suite, or one with fewer patterns."
        except (EOFError, OSError):
            if self._worker is None:  # the server is stopping, and stopped it
                return False, RegistryError("busy", "body: not checked: the server is stopping. Retry it.")
            said = "its check stopped before it ended. Retry it; if it stops again, publish a smaller suite."
        self._stop(process, requests)
        self._worker = self._new_worker()
        return False, RegistryError("busy", f"body: not checked: {said}")

    def close(self) -> None:
        """Stop the worker, and whatever check it is running: the server is going, and its clients with it."""
        if self._worker is not None:
            self._stop(*self._worker)
            self._worker = None

    @staticmethod
    def _stop(process: BaseProcess, requests: Connection) -> None:
        process.terminate()
        process.join(timeout=5)
        requests.close()


async def _within(acquired, deadline: float, behind: str) -> None:
    """Wait for `acquired` until `deadline` (the loop's clock); `busy` saying what it waited behind otherwise."""
    try:
        await asyncio.wait_for(acquired, max(0.0, deadline - asyncio.get_running_loop().time()))
    except TimeoutError:
        raise RegistryError(
            "busy",
            f"body: not checked: {behind}, and this publish waited {WAIT_S:g} s for its turn. "
            "Retry it in a little while.",
        ) from None

"""litellm in a process of its own, for `kindgi-eval run`: started as soon as a run names a litellm model (before the
command line is imported, where its words say so: `llm.spawn`), it imports litellm while the run's process imports Dagster (both imports are seconds of CPU, which two threads would only
take turns at under the interpreter lock), then makes every model call `calls.complete` sends it, on its own core; a
second, where wanted, is the sibling it forks once litellm is imported.

Each call is `calls.complete` run in the worker, so its retries, circuit and timeout are as in-process; what comes
back is its Completion or its ModelCallError. A call cancelled here is cancelled there. The worker ends when this
process closes its end of the pipe, by `stop_worker` or by ending, killed or not. This module is the run's end of
the pipe; the worker's is `worker_process`.
"""

from __future__ import annotations

import asyncio
import os
import threading
from itertools import count
from multiprocessing.connection import Connection
from typing import Any

from kindgi_eval.llm.call_error import ModelCallError
from kindgi_eval.llm.spawn import SIBLING_CORES, WorkerProcess, discard, take
from kindgi_eval.rules import Completion, ModelRef

_worker: Workers | None = None
ENDED = ("bug", "the litellm worker process ended")


class Worker:
    """The parent's end: sends requests, and settles each caller's future from a thread reading the replies."""

    def __init__(self, process: WorkerProcess | None = None, pipes: tuple[int, int] | None = None) -> None:
        """A worker process this process started (`spawn.take`), or the ends of the `pipes` of a sibling one forked
        (requests, replies), which this process cannot wait for: it ends when its requests' pipe closes."""
        self.process = process
        if process is not None:
            pipes = os.dup(process.stdin.fileno()), os.dup(process.stdout.fileno())  # type: ignore[union-attr]
            process.stdin.close()  # type: ignore[union-attr]
            process.stdout.close()  # type: ignore[union-attr]
        assert pipes is not None
        self._requests = Connection(pipes[0], readable=False)
        self._replies = Connection(pipes[1], writable=False)
        self._ids = count()
        self._waiting: dict[int, tuple[asyncio.AbstractEventLoop | None, Any]] = {}
        self._ended = False
        self._lock = threading.Lock()
        self.calls = 0
        """Model calls sent here."""
        threading.Thread(target=self._read_replies, name="litellm-worker", daemon=True).start()

    def _send(self, request: tuple, waiting: tuple[asyncio.AbstractEventLoop | None, Any] | None = None) -> None:
        """Send one request; `waiting` is settled with its reply, or at once if the worker has ended."""
        with self._lock:
            if self._ended:
                if waiting is not None:
                    _settle(*waiting, ENDED)
                return
            if waiting is not None:
                self._waiting[request[0]] = waiting
            self._requests.send(request)

    def ask(self, *request: Any) -> Any:
        """One request answered synchronously (the provider list): waits until litellm is imported."""
        done = threading.Event()
        answer: list[tuple[str, Any]] = []
        self._send((next(self._ids), *request), (None, lambda outcome: (answer.append(outcome), done.set())))
        done.wait()
        return _unwrap(answer[0])

    async def complete(self, ref: ModelRef, messages: list[dict[str, Any]], **options: Any) -> Completion:
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        call = next(self._ids)
        self.calls += 1
        self._send((call, "complete", ref, messages, options), (loop, future))
        try:
            return _unwrap(await future)
        except asyncio.CancelledError:
            self._waiting.pop(call, None)
            self._send((call, "cancel"))
            raise

    def _read_replies(self) -> None:
        while True:
            try:
                call, outcome = self._replies.recv()
            except (EOFError, OSError):
                with self._lock:
                    self._ended = True
                    for waiting in self._waiting.values():
                        _settle(*waiting, ENDED)
                return
            if (waiting := self._waiting.pop(call, None)) is not None:
                _settle(*waiting, outcome)

    @property
    def in_flight(self) -> int:
        """Requests sent and not yet answered."""
        return len(self._waiting)

    def stop(self, *, kill: bool = False) -> None:
        """Close the pipe, so the worker ends, and wait for one this process started; `kill` ends it at once (one
        still importing litellm reads its pipe only once the import is done)."""
        self._requests.close()
        if self.process is not None:
            if kill:
                self.process.kill()
            self.process.wait()


class Workers:
    """The run's worker processes. The first takes calls at once (they wait in its pipe while it imports litellm); a
    second, where wanted, is the sibling the first forks once litellm is imported (`spawn`), and takes calls from the
    moment it answers. Each call goes to the ready worker with the fewest calls in flight; the run's own semaphore
    bounds the calls in flight in all."""

    def __init__(self, wanted: int) -> None:
        process = take()
        self.first = Worker(process)
        self.ready: list[Worker] = [self.first]
        self._started: list[Worker] = [self.first]
        self._lock = threading.Lock()
        if wanted > 1 and process.sibling is not None:
            sibling = Worker(pipes=process.sibling)
            process.sibling = None  # its pipes are the sibling worker's now
            self._started.append(sibling)
            threading.Thread(target=self._add, args=(sibling,), name="litellm-workers", daemon=True).start()
        else:
            process.let_sibling_go()

    def _add(self, sibling: Worker) -> None:
        try:
            sibling.ask("providers")  # answered once it serves (litellm is imported before the fork)
        except RuntimeError:
            return  # it ended: the calls go on in the first
        with self._lock:
            self.ready = [*self.ready, sibling]

    def ask(self, *request: Any) -> Any:
        """One request answered by the first worker."""
        return self.first.ask(*request)

    async def complete(self, ref: ModelRef, messages: list[dict[str, Any]], **options: Any) -> Completion:
        return await min(self.ready, key=lambda w: w.in_flight).complete(ref, messages, **options)

    def stop(self) -> int:
        """End every worker (one still importing litellm at once); how many made calls."""
        with self._lock:
            ready = list(self.ready)
        for worker in self._started:
            worker.stop(kill=worker not in ready)
        return len(ready)


def _settle(loop: asyncio.AbstractEventLoop | None, waiter: Any, outcome: tuple[str, Any]) -> None:
    if loop is None:
        waiter(outcome)
        return
    try:
        loop.call_soon_threadsafe(lambda: waiter.done() or waiter.set_result(outcome))
    except RuntimeError:
        pass  # its loop has closed: the caller stopped waiting (a deadline) and its stage ended


def _unwrap(outcome: tuple[str, Any]) -> Any:
    status, value = outcome
    if status == "ok":
        return value
    if status == "model_call_error":
        message, fault, attempts = value
        raise ModelCallError(message, fault=fault, attempts=attempts)
    raise RuntimeError(value)


SECOND_WORKER_AT = 32
"""Calls in flight from which a second worker is wanted, where the machine has a core for it: litellm's own CPU per
call (some 5 to 11 ms here), not the provider, then bounds what one worker sends per second."""


def workers_for(concurrency: int, cores: int | None) -> int:
    """How many worker processes a run makes its calls in: two with `SIBLING_CORES` cores and at least
    `SECOND_WORKER_AT` calls in flight, else one."""
    return 2 if (cores or 1) >= SIBLING_CORES and concurrency >= SECOND_WORKER_AT else 1


def start_worker(workers: int = 1) -> None:
    """Start the first worker, which imports litellm at once, and after it up to `workers` in all; from now on this
    process's model calls are made there."""
    global _worker
    if _worker is None:
        _worker = Workers(workers)


def running() -> Workers | None:
    """The workers this process started, if any: `calls.complete` sends its calls there."""
    return _worker


def stop_worker() -> int:
    """End the workers, if they were started, and one started ahead that was not taken; how many made calls."""
    global _worker
    discard()
    ran = 0
    if _worker is not None:
        ran = _worker.stop()
        _worker = None
    return ran

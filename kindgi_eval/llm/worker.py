"""litellm in a process of its own, for `kindgi-eval run`: started as soon as a run names a litellm model (before the
command line is imported, where its words say so: `llm.spawn`), it imports litellm while the run's process imports Dagster (both imports are seconds of CPU, which two threads would only
take turns at under the interpreter lock), then makes every model call `calls.complete` sends it, on its own core.

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
from kindgi_eval.llm.spawn import discard, take
from kindgi_eval.rules import Completion, ModelRef

_worker: Worker | None = None
ENDED = ("bug", "the litellm worker process ended")


class Worker:
    """The parent's end: sends requests, and settles each caller's future from a thread reading the replies."""

    def __init__(self) -> None:
        self.process = take()
        self._requests = Connection(os.dup(self.process.stdin.fileno()), readable=False)  # type: ignore[union-attr]
        self._replies = Connection(os.dup(self.process.stdout.fileno()), writable=False)  # type: ignore[union-attr]
        self.process.stdin.close()  # type: ignore[union-attr]
        self.process.stdout.close()  # type: ignore[union-attr]
        self._ids = count()
        self._waiting: dict[int, tuple[asyncio.AbstractEventLoop | None, Any]] = {}
        self._ended = False
        self._lock = threading.Lock()
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

    async def complete(self, ref: ModelRef, messages: list[dict[str, str]], **options: Any) -> Completion:
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        call = next(self._ids)
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

    def stop(self) -> None:
        """Close the pipe, so the worker ends, and wait for it."""
        self._requests.close()
        self.process.wait()


def _settle(loop: asyncio.AbstractEventLoop | None, waiter: Any, outcome: tuple[str, Any]) -> None:
    if loop is None:
        waiter(outcome)
        return
    try:
        loop.call_soon_threadsafe(lambda: waiter.done() or waiter.set_result(outcome))
    except RuntimeError:
        pass  # its loop has closed: the caller stopped waiting (a deadline) and its stage ended


def _unwrap(outcome: tuple[str, Any]) -> Any:
    kind, value = outcome
    if kind == "ok":
        return value
    if kind == "model_call_error":
        message, fault, attempts = value
        raise ModelCallError(message, fault=fault, attempts=attempts)
    raise RuntimeError(value)


def start_worker() -> None:
    """Start the worker, which imports litellm at once; from now on this process's model calls are made there."""
    global _worker
    if _worker is None:
        _worker = Worker()


def running() -> Worker | None:
    """The worker this process started, if any: `calls.complete` sends its calls there."""
    return _worker


def stop_worker() -> None:
    """End the worker, if one was started, and one started ahead that was not taken."""
    global _worker
    discard()
    if _worker is not None:
        _worker.stop()
        _worker = None

"""litellm in a process of its own, for `kindgi-eval run`: started as soon as a run names a litellm model, it imports
litellm while the run's process imports Dagster (both imports are seconds of CPU, which two threads would only
take turns at under the interpreter lock), then makes every model call `calls.complete` sends it, on its own core.

Each call is `calls.complete` run in the worker, so its retries, circuit and timeout are as in-process; what comes
back is its Completion or its ModelCallError. A call cancelled here is cancelled there. The worker ends when this
process closes its end of the pipe, by `stop_worker` or by ending, killed or not.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import threading
from itertools import count
from multiprocessing.connection import Connection
from typing import Any

from kindgi_eval.spec import Completion, ModelRef

_worker: Worker | None = None
ENDED = ("bug", "the litellm worker process ended")


class Worker:
    """The parent's end: sends requests, and settles each caller's future from a thread reading the replies."""

    def __init__(self) -> None:
        command = [sys.executable, "-c", f"import {__name__}; {__name__}.main()"]
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
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
    from kindgi_eval.llm.calls import ModelCallError

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
    """End the worker, if one was started."""
    global _worker
    if _worker is not None:
        _worker.stop()
        _worker = None


# ---- the worker process --------------------------------------------------------------------------------------


def _serve(requests: Connection, replies: Connection) -> None:
    from kindgi_eval.llm import calls

    calls.prepare()  # litellm's import: the seconds this process exists to take beside the run's
    loop = asyncio.new_event_loop()
    tasks: dict[int, asyncio.Task] = {}
    warming: list[asyncio.Task] = []

    def reply(call: int, outcome: tuple[str, Any]) -> None:
        tasks.pop(call, None)
        replies.send((call, outcome))

    async def one(call: int, ref: ModelRef, messages: list[dict[str, str]], options: dict[str, Any]) -> None:
        try:
            outcome = ("ok", await calls.complete(ref, messages, **options))
        except calls.ModelCallError as e:
            outcome = ("model_call_error", (str(e), e.fault, e.attempts))
        except asyncio.CancelledError:
            tasks.pop(call, None)
            return
        except Exception as e:  # a bug: said in the parent's words, not lost
            outcome = ("bug", calls.scrub(f"{type(e).__name__}: {e}"))
        reply(call, outcome)

    def handle(call: int, kind: str, *args: Any) -> None:
        if kind == "complete":
            tasks[call] = loop.create_task(one(call, *args))
        elif kind == "cancel" and call in tasks:
            tasks[call].cancel()
        elif kind == "providers":
            reply(call, ("ok", calls.provider_names()))
            if not warming:  # the run asks this first, then sets up for a second before its first call: warm up now
                warming.append(loop.create_task(calls.warm_up()))

    def read() -> None:
        while True:
            try:
                request = requests.recv()
            except EOFError:
                os._exit(0)  # the run's process is done with us: nothing here is left to write
            loop.call_soon_threadsafe(handle, *request)

    threading.Thread(target=read, daemon=True).start()
    loop.run_forever()


def main() -> None:
    """The worker process: serves the requests on stdin, replying on stdout."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the run's to handle; its exit ends this process
    # stdout carries the replies; anything printed goes to stderr, so nothing can corrupt them
    replies_fd = os.dup(1)
    os.dup2(2, 1)
    _serve(Connection(os.dup(0), writable=False), Connection(replies_fd, readable=False))

"""The litellm worker process (`worker.Worker` starts it): imports litellm at once, then makes each model call the
run's process sends on its stdin with `calls.complete`, replying on its stdout, until that pipe closes. Given the ends
of a sibling's pipes, it forks the sibling once litellm is imported, before any thread or event loop is started, and
the sibling serves those pipes alike."""

from __future__ import annotations

import asyncio
import os
import signal
import threading
from multiprocessing.connection import Connection
from typing import Any

from kindgi_eval.llm.call_error import ModelCallError
from kindgi_eval.llm.calls import complete, prepare, provider_names, scrub, warm_up
from kindgi_eval.rules import ModelRef


def _serve(requests: Connection, replies: Connection) -> None:
    loop = asyncio.new_event_loop()
    tasks: dict[int, asyncio.Task] = {}
    warming: list[asyncio.Task] = []

    def reply(call: int, outcome: tuple[str, Any]) -> None:
        tasks.pop(call, None)
        replies.send((call, outcome))

    async def one(call: int, ref: ModelRef, messages: list[dict[str, Any]], options: dict[str, Any]) -> None:
        try:
            outcome = ("ok", await complete(ref, messages, **options))
        except ModelCallError as e:
            outcome = ("model_call_error", (str(e), e.fault, e.attempts))
        except asyncio.CancelledError:
            tasks.pop(call, None)
            return
        except Exception as e:  # a bug: said in the parent's words, not lost
            outcome = ("bug", scrub(f"{type(e).__name__}: {e}"))
        reply(call, outcome)

    def handle(call: int, request: str, *args: Any) -> None:
        if request == "complete":
            tasks[call] = loop.create_task(one(call, *args))
        elif request == "cancel" and call in tasks:
            tasks[call].cancel()
        elif request == "providers":
            reply(call, ("ok", provider_names()))
            if not warming:  # the run asks this first, then sets up for a second before its first call: warm up now
                warming.append(loop.create_task(warm_up()))

    def read() -> None:
        while True:
            try:
                request = requests.recv()
            except EOFError:
                os._exit(0)  # the run's process is done with us: nothing here is left to write
            loop.call_soon_threadsafe(handle, *request)

    threading.Thread(target=read, daemon=True).start()
    loop.run_forever()


def main(sibling: tuple[int, ...] = ()) -> None:
    """The worker process: serves the requests on stdin, replying on stdout; with `sibling` (the read end of its
    requests and the write end of its replies), forks it once litellm is imported."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the run's to handle; its exit ends this process
    # stdout carries the replies; anything printed goes to stderr, so nothing can corrupt them
    requests_fd, replies_fd = os.dup(0), os.dup(1)
    os.dup2(2, 1)
    prepare()  # litellm's import: the seconds this process exists to take beside the run's
    if sibling and os.fork() == 0:  # the sibling: the first's pipes are not its own
        os.close(requests_fd)
        os.close(replies_fd)
        requests_fd, replies_fd = sibling
    else:
        for fd in sibling:
            os.close(fd)
    _serve(Connection(requests_fd, writable=False), Connection(replies_fd, readable=False))

"""Serving the registry with uvicorn: `serve` blocks (the CLI's `kindgi-eval serve`), `running_server` runs one in a
thread for tests and benchmarks. Opens sockets."""

from __future__ import annotations

import functools
import socket
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

import uvicorn

from kindgi_eval.registry.app import create_app
from kindgi_eval.registry.consumers import Consumers
from kindgi_eval.registry.http_limits import (
    KEEP_ALIVE_S,
    BoundedHttpTools,
    ConnectionGate,
    connection_bound,
    raised_open_files,
)
from kindgi_eval.registry.storage import RegistryStore
from kindgi_eval.rules import InputError, Problem, SuiteLimits

DEFAULT_HOST, DEFAULT_PORT = "127.0.0.1", 8765


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on host:port; InputError when the address cannot be had (in use, not this machine's)."""
    try:
        family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
        return socket.create_server((host, port), family=family, backlog=2048)
    except OSError as e:
        raise InputError(
            [
                Problem(
                    f"{host}:{port}",
                    None,
                    None,
                    f"cannot listen there: {e.strerror or e}. Pick another --port (or --host), or stop what holds it.",
                )
            ]
        ) from None


def _gate() -> ConnectionGate:
    """The bounds of a new server's connections, the process's open-file limit raised for them."""
    return ConnectionGate(connection_bound(raised_open_files()))


def _server(
    store: RegistryStore,
    consumers: Consumers,
    gate: ConnectionGate,
    *,
    quiet: bool,
    limits: Mapping[str, SuiteLimits] | None = None,
) -> uvicorn.Server:
    # no `limit_concurrency`: uvicorn counts every open connection in it, so sockets that send nothing would make every
    # request 503; the protocol bounds the requests in progress, and the gate the connections (http_limits.py)
    config = uvicorn.Config(
        create_app(store, consumers, limits),
        lifespan="on",
        log_level="warning" if quiet else "info",
        log_config=None if quiet else uvicorn.config.LOGGING_CONFIG,
        access_log=not quiet,
        http=functools.partial(BoundedHttpTools, gate=gate),
        timeout_keep_alive=KEEP_ALIVE_S,
    )
    return uvicorn.Server(config)


def serve(
    store: RegistryStore,
    consumers: Consumers,
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    limits: Mapping[str, SuiteLimits] | None = None,
) -> None:
    """Serve the registry on host:port until interrupted, each tenant's suites held to its `limits` (the defaults for a
    tenant not named); Ctrl-C returns after a graceful shutdown (SIGTERM, once shut down, ends the process by that
    signal, as uvicorn does)."""
    sock = bind(host, port)
    try:
        _server(store, consumers, _gate(), quiet=False, limits=limits).run(sockets=[sock])
    except KeyboardInterrupt:  # uvicorn raises the captured SIGINT again once it has shut down
        pass
    finally:
        sock.close()


class RunningServer:
    """A registry served from a thread of this process; `url` is its base URL, `gate` the bounds of its connections."""

    def __init__(self, server: uvicorn.Server, thread: threading.Thread, url: str, gate: ConnectionGate):
        self.server, self.thread, self.url, self.gate = server, thread, url, gate

    def stop(self) -> None:
        """Stop serving and wait for the thread."""
        self.server.should_exit = True
        self.thread.join(timeout=10)


@contextmanager
def running_server(
    store: RegistryStore,
    consumers: Consumers,
    host: str = DEFAULT_HOST,
    port: int = 0,
    limits: Mapping[str, SuiteLimits] | None = None,
) -> Iterator[RunningServer]:
    """The registry served on host:port (a free port by default) for the duration of the block, each tenant's suites
    held to its `limits`."""
    sock = bind(host, port)
    gate = _gate()
    server = _server(store, consumers, gate, quiet=True, limits=limits)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, name="kindgi-registry", daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            sock.close()
            raise RuntimeError("the registry server did not start")
        time.sleep(0.01)
    bound_host, bound_port = sock.getsockname()[:2]
    running = RunningServer(
        server, thread, f"http://{bound_host if ':' not in bound_host else f'[{bound_host}]'}:{bound_port}", gate
    )
    try:
        yield running
    finally:
        running.stop()
        sock.close()

"""The registry's HTTP connections, bounded before any route runs: the bytes of a request's head (request line and
headers), the time a client may take to send it, the connections that wait for one, and the requests served at once.
Opens no socket itself.

uvicorn bounds none of the first two with httptools (its fast parser, which it picks when installed, and which
buffers a header line of any length), so the protocol is uvicorn's own with a count and a timer added. A request
whose head is too large is answered 431 and its connection closed; a head not complete in time closes the
connection unanswered (a client that slow is reading nothing), so no connection can be held open by sending a
header byte at a time.

A connection that waits for a request's head (newly opened, sending its head slowly, or idle between requests) holds
no request: it is counted apart from the requests in progress, which alone can be answered 503. Waiting connections
are bounded per client address and, with the rest, in total; past either bound the one that has waited longest is
closed, so connections that send nothing cannot crowd out a request that arrives whole.
"""

from __future__ import annotations

import asyncio
import resource
from typing import Any

from uvicorn.protocols.http.flow_control import service_unavailable
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

MAX_HEAD = 64 * 1024
"""Bytes of a request line and its headers together; a browser sends a few KiB at most."""
HEAD_TIMEOUT_S = 10.0
"""Seconds from a connection's first byte of a request (or its opening) to the end of that request's headers."""
MAX_REQUESTS = 512
"""Requests in progress at once (a head received, the answer not yet sent); beyond it, a request is answered 503."""
MAX_CONNECTIONS = 16_384
"""Connections open at once, at most: fewer where the process may not open that many files (`connection_bound`)."""
MAX_WAITING_PER_CLIENT = 64
"""Connections of one client address waiting for a request's head. A browser opens 6 to a host; a proxy in front holds
its idle connections, beyond this many the longest idle is closed and the proxy opens another."""
FILES_KEPT = 128
"""Open files kept for what is not a client's connection: the database, the log, the listening socket."""
KEEP_ALIVE_S = 5
"""Seconds an idle kept-alive connection stays open (uvicorn's `timeout_keep_alive`)."""


def raised_open_files() -> int:
    """Raise this process's limit of open files to its hard limit (a connection is one); the limit now."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft < hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
        except (ValueError, OSError):  # a hard limit the kernel will not grant (over fs.nr_open): keep the soft one
            pass
    return soft


def connection_bound(open_files: int) -> int:
    """Connections served at once by a process that may open `open_files` files: MAX_CONNECTIONS, or what the limit
    leaves after FILES_KEPT (and room for a few connections however low it is)."""
    return max(16, min(MAX_CONNECTIONS, open_files - FILES_KEPT))


class ConnectionGate:
    """The connections of one server: how many are open, and which wait for a request's head, oldest first, in all and
    per client address. Past `total` open, or `per_client` waiting from one address, the one that has waited longest is
    closed. Runs on the server's event loop only."""

    def __init__(self, total: int, per_client: int = MAX_WAITING_PER_CLIENT):
        self.total = total
        """Connections open at once, at most."""
        self.per_client = per_client
        """Connections of one client address waiting for a head, at most."""
        self.open = 0
        """Connections open now (those closed by the gate no longer count)."""
        self.closed = 0
        """Connections the gate has closed, since the server started."""
        self._waiting: dict[Any, None] = {}  # insertion order: the longest waiting first
        self._waiting_of: dict[str, dict[Any, None]] = {}

    def admit(self, connection: BoundedHttpTools) -> None:
        """A connection just opened: it waits for its first head; the longest waiting is closed if there are too many."""
        self.open += 1
        self.wait(connection)
        if self.open > self.total:
            self._close(next(iter(self._waiting), connection))

    def wait(self, connection: BoundedHttpTools) -> None:
        """`connection` waits for a request's head (opened, or its answer sent)."""
        self._waiting[connection] = None
        of_client = self._waiting_of.setdefault(connection.client_host, {})
        of_client[connection] = None
        if len(of_client) > self.per_client:
            self._close(next(iter(of_client)))

    def busy(self, connection: BoundedHttpTools) -> None:
        """A request's head has arrived on `connection`: it is a request in progress, no longer waiting."""
        self._waiting.pop(connection, None)
        of_client = self._waiting_of.get(connection.client_host)
        if of_client is not None:
            of_client.pop(connection, None)
            if not of_client:
                del self._waiting_of[connection.client_host]

    def lost(self, connection: BoundedHttpTools) -> None:
        """`connection` is closed (by its client, a timer or the gate)."""
        self.busy(connection)
        if connection.counted:
            connection.counted = False
            self.open -= 1

    def _close(self, connection: BoundedHttpTools) -> None:
        self.lost(connection)  # now, not when the transport reports it: the next connection must not count it
        self.closed += 1
        if not connection.transport.is_closing():
            connection.transport.close()


class BoundedHttpTools(HttpToolsProtocol):
    """uvicorn's httptools protocol, with the head of each request bounded in bytes and in time, the connections that
    wait for a head bounded by the server's `gate`, and the requests in progress by MAX_REQUESTS."""

    def __init__(self, *args: Any, gate: ConnectionGate, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.gate = gate
        """The connections of the server this one belongs to."""
        self.counted = False
        """Whether the gate counts this connection as open."""
        self.client_host = ""
        """The client's address, without its port."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._head_bytes = 0
        self._tail = b""  # the last bytes of the head so far, so an end of head split over two reads is seen
        self._in_head = True
        self._head_deadline: asyncio.TimerHandle | None = None
        self._arm()
        self.client_host = self.client[0] if self.client else ""
        self.counted = True
        self.gate.admit(self)

    def data_received(self, data: bytes) -> None:
        if self._in_head:
            self._head_bytes += len(data)
            seen, self._tail = self._tail + data, (self._tail + data)[-3:]
            if self._head_bytes - len(data) > MAX_HEAD or (self._head_bytes > MAX_HEAD and b"\r\n\r\n" not in seen):
                self._refuse_head()  # every byte so far was head, and it is past the bound
                return
        super().data_received(data)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        if not self._in_head:  # the next request on a kept-alive connection: its head is bounded anew
            self._in_head, self._head_bytes, self._tail = True, 0, b""
            self._arm()

    def on_headers_complete(self) -> None:
        self._in_head = False
        self._disarm()
        self.gate.busy(self)
        super().on_headers_complete()

    def on_response_complete(self) -> None:
        next_in_line = bool(self.pipeline)  # a pipelined request starts at once: the connection stays busy
        super().on_response_complete()
        if not next_in_line and not self.transport.is_closing():
            self.gate.wait(self)

    def _start_asgi_task(self, cycle: Any, app: Any) -> None:
        if len(self.tasks) >= MAX_REQUESTS:  # what uvicorn's `limit_concurrency` does, counting requests only
            self.logger.warning("Exceeded concurrency limit.")
            app = service_unavailable
        super()._start_asgi_task(cycle, app)

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        self.gate.lost(self)
        super().connection_lost(exc)

    def _arm(self) -> None:
        self._disarm()
        self._head_deadline = self.loop.call_later(HEAD_TIMEOUT_S, self._head_too_slow)

    def _disarm(self) -> None:
        if self._head_deadline is not None:
            self._head_deadline.cancel()
            self._head_deadline = None

    def _head_too_slow(self) -> None:
        self._head_deadline = None
        if self._in_head and not self.transport.is_closing():
            self.transport.close()

    def _refuse_head(self) -> None:
        self._disarm()
        if self.transport.is_closing():
            return
        body = f"the request line and headers are over {MAX_HEAD} bytes".encode("ascii")
        self.transport.write(
            b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-type: text/plain; charset=utf-8\r\n"
            b"content-length: " + str(len(body)).encode("ascii") + b"\r\nconnection: close\r\n\r\n" + body
        )
        self.transport.close()

"""The registry's HTTP connections, bounded before any route runs: the bytes of a request's head (request line and
headers), the time a client may take to send it, and the connections served at once. Opens no socket itself.

uvicorn bounds none of the first two with httptools (its fast parser, which it picks when installed, and which
buffers a header line of any length), so the protocol is uvicorn's own with a count and a timer added. A request
whose head is too large is answered 431 and its connection closed; a head not complete in time closes the
connection unanswered (a client that slow is reading nothing), so no connection can be held open by sending a
header byte at a time.
"""

from __future__ import annotations

import asyncio

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

MAX_HEAD = 64 * 1024
"""Bytes of a request line and its headers together; a browser sends a few KiB at most."""
HEAD_TIMEOUT_S = 10.0
"""Seconds from a connection's first byte of a request (or its opening) to the end of that request's headers."""
MAX_CONNECTIONS = 512
"""Connections and requests served at once; beyond it, uvicorn answers 503 (`limit_concurrency`)."""
KEEP_ALIVE_S = 5
"""Seconds an idle kept-alive connection stays open (uvicorn's `timeout_keep_alive`)."""


class BoundedHttpTools(HttpToolsProtocol):
    """uvicorn's httptools protocol, with the head of each request bounded in bytes and in time."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._head_bytes = 0
        self._tail = b""  # the last bytes of the head so far, so an end of head split over two reads is seen
        self._in_head = True
        self._head_deadline: asyncio.TimerHandle | None = None
        self._arm()

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
        super().on_headers_complete()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
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
        self.transport.write(b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-type: text/plain; charset=utf-8\r\n"
                             b"content-length: " + str(len(body)).encode("ascii") + b"\r\nconnection: close\r\n\r\n" + body)
        self.transport.close()

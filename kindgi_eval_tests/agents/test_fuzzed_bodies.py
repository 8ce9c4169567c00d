"""Any body an HTTP agent sends over a real socket gives a valid reply row or a recorded error, never a crash
(property-based, with hypothesis): any status, any content type and charset, bytes that are not UTF-8, JSON of the
wrong shape, a body cut off mid-way, and bodies around and far past BODY_LIMIT.

One server on 127.0.0.1 serves the whole test; each example sets the answer it gives next. The server writes raw
HTTP/1.1 itself, so it can declare a length it never sends, leave a chunked body unfinished, or pad a body to
megabytes without the example building it."""

from __future__ import annotations

import asyncio
import json
import socket
import socketserver
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import pytest
from hypothesis import HealthCheck, event, given, note, settings
from hypothesis import strategies as st

from kindgi_eval.agents.http import BODY_LIMIT, HttpAgent
from kindgi_eval.rules.agent_protocol import AgentTurn
from kindgi_eval.steps.agent_replies import collect_replies
from kindgi_eval.store.arrow import from_table, to_table
from kindgi_eval.store.rows import ReplyRow
from kindgi_eval_tests.agents.test_fuzzed_answers import JSON, NEAR_REPLY

MIB = 1 << 20
TURN = AgentTurn(tenant="demo-academy", case_id="fuzzed", text="how much is the foundation course?")
CHARSETS = {None: "utf-8", "utf-8": "utf-8", "iso-8859-1": "latin-1", "no-such-charset": "utf-8", "rot13": "utf-8"}
"""Charsets a body may declare, and what it is read in: an unknown codec, or one that is no text encoding, is UTF-8."""


@dataclass(frozen=True)
class Body:
    """What the server answers next."""

    status: int
    content_type: str | None
    """The Content-Type header's media type, without a charset; None sends no Content-Type."""
    charset: str | None
    """The charset parameter added to the Content-Type; None adds none."""
    payload: bytes
    size: int | None
    """Spaces are appended to the payload until the body is this long (JSON allows trailing whitespace)."""
    framing: str
    """`length` (Content-Length), `chunked` (Transfer-Encoding), or `close` (read until the server closes)."""
    cut: int | None
    """Truncated: with `length`, this many bytes more are declared than sent; with `chunked`, no last chunk is sent."""
    gzip: bool = False
    """Declares Content-Encoding: gzip, which the agent did not ask for."""

    @property
    def length(self) -> int:
        return max(len(self.payload), self.size or 0)

    def chunks(self) -> Iterator[bytes]:
        """The body, a payload and its padding, 256 KiB at a time: never built whole."""
        yield self.payload
        pad = self.length - len(self.payload)
        while pad > 0:
            step = min(pad, 256 << 10)
            yield b" " * step
            pad -= step

    def head(self) -> bytes:
        lines = [f"HTTP/1.1 {self.status} Fuzzed", "Connection: close"]
        if self.content_type is not None:
            lines.append(f"Content-Type: {self.content_type}" + (f"; charset={self.charset}" if self.charset else ""))
        if self.gzip:
            lines.append("Content-Encoding: gzip")
        if self.framing == "length":
            lines.append(f"Content-Length: {self.length + (self.cut or 0)}")
        elif self.framing == "chunked":
            lines.append("Transfer-Encoding: chunked")
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


class AgentServer(socketserver.ThreadingTCPServer):
    """Serves `next` to every request, until shut down by its handle."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.next: Body | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/reply"

    @contextmanager
    def running(self) -> Iterator[AgentServer]:
        """This server, serving from a thread of its own for the block, then shut down and closed."""
        thread = threading.Thread(target=self.serve_forever, daemon=True)
        thread.start()
        try:
            yield self
        finally:
            self.shutdown()
            self.server_close()
            thread.join(timeout=5)


class _Handler(socketserver.StreamRequestHandler):
    def handle(self) -> None:
        headers = b""
        while not headers.endswith(b"\r\n\r\n"):
            line = self.rfile.readline()
            if not line:
                return
            headers += line
        length = next(
            (int(h.split(b":")[1]) for h in headers.split(b"\r\n") if h.lower().startswith(b"content-length:")), 0
        )
        self.rfile.read(length)
        body: Body = self.server.next  # type: ignore[attr-defined]
        try:
            self.wfile.write(body.head())
            for chunk in body.chunks():
                self.wfile.write(
                    b"%x\r\n%s\r\n" % (len(chunk), chunk) if body.framing == "chunked" and chunk else chunk
                )
            if body.framing == "chunked" and body.cut is None:
                self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_WR)
        except OSError:
            pass  # the agent stopped reading (a body over the limit, or a declared length over it) and hung up


@pytest.fixture(scope="module")
def server() -> Iterator[AgentServer]:
    with AgentServer().running() as serving:
        yield serving


# --- what the server may answer ---------------------------------------------------------------------------------

STATUSES = st.one_of(
    st.just(200),
    st.just(200),
    st.integers(200, 299),
    st.sampled_from([204, 301, 304, 400, 404, 429, 500, 503]),
    st.integers(100, 999),
)
"""Mostly 200, so that most bodies are read; and any status HTTP/1.1 can carry."""
REPLY = st.fixed_dictionaries(
    {
        "messages": st.lists(st.text(max_size=30), max_size=3),
        "escalate": st.booleans(),
        "reason": st.none() | st.text(max_size=20),
    }
)


def _encoded(value: object, encoding: str) -> bytes:
    return json.dumps(value, ensure_ascii=False).encode(encoding, errors="replace")


PAYLOADS = st.one_of(
    REPLY.map(lambda r: json.dumps(r).encode()),  # the right shape, ASCII
    REPLY.map(lambda r: _encoded(r, "utf-8")),  # the right shape, UTF-8
    REPLY.map(lambda r: _encoded(r, "utf-8")),
    REPLY.map(lambda r: _encoded(r, "latin-1")),  # the right shape in Latin-1: not UTF-8 when it holds é
    (NEAR_REPLY | JSON).map(lambda v: json.dumps(v).encode()),  # JSON of the wrong shape, mostly
    st.binary(max_size=300),  # any bytes
    st.tuples(
        REPLY.map(lambda r: json.dumps(r).encode()),
        st.integers(0, 40),
        st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\x80"]),
    ).map(
        lambda t: t[0][: t[1]] + t[2] + t[0][t[1] :]  # a byte that is not UTF-8 (or a surrogate, UTF-8-encoded) inside
    ),
    st.sampled_from(
        [  # half a surrogate pair, escaped: valid JSON, but no Unicode text
            b'{"messages": ["\\ud800"], "escalate": false, "reason": null}',
            b'{"messages": ["ok"], "escalate": true, "reason": "\\udfff"}',
        ]
    ),
)
SIZES = (
    st.none()
    | st.none()
    | st.integers(0, 4096)
    | st.sampled_from([BODY_LIMIT - 1, BODY_LIMIT, BODY_LIMIT + 1, 3 * MIB])
)
CONTENT_TYPES = (
    st.none()
    | st.sampled_from(["application/json", "text/plain", "text/html", "application/octet-stream"])
    | st.text(
        st.sampled_from("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789!#$%&'*+-.^_`|~/"), max_size=30
    )
)  # any media type of token characters; a quote or a `;` would change where the charset parameter is read from


@st.composite
def bodies(draw: st.DrawFn) -> Body:
    framing = draw(st.sampled_from(["length", "chunked", "close"]))
    truncated = framing != "close" and draw(st.integers(0, 3)) == 0
    return Body(
        status=draw(STATUSES),
        content_type=draw(CONTENT_TYPES),
        charset=draw(st.sampled_from(list(CHARSETS))),
        payload=draw(PAYLOADS),
        size=draw(SIZES),
        framing=framing,
        cut=draw(st.sampled_from([1, 1000, 50 * MIB])) if truncated else None,
        gzip=draw(st.integers(0, 19)) == 0,
    )


# --- what the agent must make of it -----------------------------------------------------------------------------


def expected(body: Body) -> dict | str:
    """The reply an answer must give (messages, escalate, reason), or how its error must begin; written apart from
    the agent's own reading, from the protocol (docs/running.md#evaluating-an-agent-over-http) and the limit."""
    if body.status < 200:  # informational: the answer proper should follow, and what follows is no HTTP head
        return "the agent at "
    if body.gzip:
        return f"the agent answered HTTP {body.status} with Content-Encoding 'gzip'"
    declared = body.length + (body.cut or 0) if body.framing == "length" else None
    no_body = body.status in (204, 304)  # HTTP: these answers have no body, whatever follows their head
    if (declared or 0) > BODY_LIMIT or (body.length > BODY_LIMIT and not no_body):
        return f"the agent's answer (HTTP {body.status}) "
    if body.cut is not None and not no_body:
        return "the agent at "  # broke off its answer
    if not 200 <= body.status < 300:
        return f"the agent answered HTTP {body.status}"
    content = b"" if no_body else b"".join(body.chunks())
    try:
        found = json.loads(content.decode(CHARSETS[body.charset if body.content_type is not None else None]))
    except ValueError:
        return "the agent's answer is not "
    if (
        isinstance(found, dict)
        and set(found) == {"messages", "escalate", "reason"}
        and isinstance(found["messages"], list)
        and all(isinstance(m, str) for m in found["messages"])
        and type(found["escalate"]) is bool
        and (found["reason"] is None or isinstance(found["reason"], str))
    ):
        texts = [*found["messages"], found["reason"] or ""]
        if not any(0xD800 <= ord(c) <= 0xDFFF for t in texts for c in t):  # a lone surrogate is no character
            return found
    return "the agent's answer "


@pytest.fixture(scope="module")
def agent(server: AgentServer) -> HttpAgent:
    """One agent for every example: making one builds a TLS context, about 100 ms."""
    return HttpAgent(server.url, timeout_s=5)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=bodies())
def test_any_body_over_a_socket_is_a_reply_or_a_recorded_error(
    server: AgentServer, agent: HttpAgent, body: Body
) -> None:
    note(repr(body)[:2000])
    server.next = body
    (row,) = asyncio.run(collect_replies(agent, [TURN], concurrency=1, deadline_ms=10_000))
    # the row is one the store can write and read back as it was: no lone surrogate, no field of the wrong type
    assert from_table(to_table([row], ReplyRow), ReplyRow) == [row]
    want = expected(body)
    event("a reply" if isinstance(want, dict) else want.split(" (HTTP")[0].split(" HTTP")[0])
    if isinstance(want, dict):
        assert row.error is None, row.error
        assert (row.messages, row.escalate, row.reason) == (want["messages"], want["escalate"], want["reason"])
    else:
        assert row.error is not None and row.error.startswith(want), (want, row.error)
        assert (row.messages, row.escalate, row.reason) == ([], None, None)
        assert len(row.error) < 2_000  # clipped, however long the body
        assert row.raw is None or len(row.raw) <= BODY_LIMIT  # never more than the limit is kept

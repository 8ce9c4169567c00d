"""The registry's connections are bounded before any route runs, on the real server over real sockets: a request's
head in bytes and in time, and a client that goes away mid-upload ends its request quietly."""

from __future__ import annotations

import resource
import socket
import time
from urllib.parse import urlsplit

import httpx
import pytest

from kindgi_eval.registry import http_limits
from kindgi_eval_tests.registry.conftest import suite


def connect(url: str, source: str | None = None) -> socket.socket:
    """A connection to the server, from `source` (another address of the loopback network) if given."""
    parts = urlsplit(url)
    return socket.create_connection(
        (parts.hostname, parts.port), timeout=10, source_address=(source, 0) if source else None
    )


def half_open(url: str, source: str) -> socket.socket:
    """A connection that has sent the start of a request head, and will send no more."""
    sock = connect(url, source)
    sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
    return sock


def settled(condition, seconds: float = 5.0) -> bool:
    """Whether `condition()` holds within `seconds` (the server sees connections a little after they are made)."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def read_all(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection."""
    chunks = []
    while chunk := sock.recv(65536):
        chunks.append(chunk)
    return b"".join(chunks)


def closed_unanswered(sock: socket.socket) -> bool:
    """The server closed the connection without a byte of answer (a reset too: it may close with the head unread)."""
    try:
        return read_all(sock) == b""
    except ConnectionResetError:
        return True


def peak_rss_mib() -> float:
    for line in open("/proc/self/status").read().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmHWM")


def test_a_head_over_its_bound_is_answered_431_and_closed_unread(registry) -> None:
    before = peak_rss_mib()
    socks = []
    for _ in range(20):  # twenty connections, each sending a 16 MiB header line, held 385 MiB before the bound
        sock = connect(registry.url)
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Pad: ")
        try:
            for _ in range(256):
                sock.sendall(b"a" * 65536)
        except (BrokenPipeError, ConnectionResetError):
            pass  # closed by the server past the bound, as it should be
        socks.append(sock)
    answered = 0
    for sock in socks:
        try:  # the reset of a closed socket with unread bytes may come before the answer is read
            answer = read_all(sock)
            assert answer.startswith(b"HTTP/1.1 431")
            answered += 1
        except ConnectionResetError:
            pass
        sock.close()
    assert answered > 0  # and no connection was ever answered otherwise
    assert peak_rss_mib() - before < 64
    assert httpx.get(f"{registry.url}/healthz").status_code == 200


def test_a_head_just_under_its_bound_is_served(registry) -> None:
    pad = b"a" * (http_limits.MAX_HEAD - 200)
    with connect(registry.url) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\nX-Pad: " + pad + b"\r\n\r\n")
        assert read_all(sock).startswith(b"HTTP/1.1 200")


def test_a_head_sent_too_slowly_closes_its_connection_and_others_are_served(registry, monkeypatch) -> None:
    monkeypatch.setattr(http_limits, "HEAD_TIMEOUT_S", 0.5)
    held = [connect(registry.url) for _ in range(200)]  # a thousand of these stayed open for good before the bound
    for sock in held:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")  # and never the blank line that ends the head
    assert httpx.get(f"{registry.url}/healthz").status_code == 200  # meanwhile, another client is served
    time.sleep(1.0)
    for sock in held:
        sock.settimeout(5)
        assert closed_unanswered(sock)
        sock.close()


@pytest.mark.parametrize("sent", [0, 1000])
def test_an_upload_its_client_abandons_ends_quietly(registry, caller, sent, caplog) -> None:
    me = caller()
    body = suite(me.tenant, f"{me.tenant}.gone").__repr__().encode()[:sent]
    counted = registry.app.state.aborted_uploads
    with connect(registry.url) as sock:
        sock.sendall(
            b"POST /v1/eval-suites HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 5000\r\n"
            + f"Authorization: Bearer {me.secret}\r\n\r\n".encode()
            + body
        )
        sock.shutdown(socket.SHUT_WR)
        time.sleep(0.3)
    for _ in range(100):  # the server sees the connection go, then ends the request
        if registry.app.state.aborted_uploads > counted:
            break
        time.sleep(0.02)
    assert registry.app.state.aborted_uploads == counted + 1
    assert "Traceback" not in caplog.text and "ClientDisconnect" not in caplog.text
    assert httpx.get(f"{registry.url}/healthz").status_code == 200


def test_half_open_connections_do_not_make_honest_requests_fail(registry, caller) -> None:
    me = caller()
    # 600 connections from 20 addresses, 30 each (each address under its bound), every one a head never finished: with
    # uvicorn's limit_concurrency of 512 counting them, every request was 503 until they timed out
    held = [half_open(registry.url, f"127.0.0.{2 + n % 20}") for n in range(600)]
    try:
        assert settled(lambda: registry.gate.open >= 600)  # all held at once, none refused
        for _ in range(10):
            assert me.http.get("/healthz").status_code == 200
        published = me.http.post("/v1/eval-suites", json=suite(me.tenant, f"{me.tenant}.amid"))
        assert published.status_code == 201, published.text
        assert me.http.get(f"/v1/eval-suites/{me.tenant}.amid").status_code == 200
    finally:
        for sock in held:
            sock.close()


def test_one_address_keeps_at_most_its_bound_of_waiting_connections_the_newest(registry) -> None:
    bound = registry.gate.per_client
    closed_before = registry.gate.closed
    held = [half_open(registry.url, "127.0.0.77") for _ in range(bound + 100)]
    try:
        assert settled(lambda: registry.gate.closed >= closed_before + 100)
        for sock in held[:100]:  # the longest waiting were closed, unanswered
            assert closed_unanswered(sock)
        for sock in held[100:]:  # the newest are still open: nothing to read yet
            sock.settimeout(0.01)
            with pytest.raises(TimeoutError):
                sock.recv(1)
        # a whole request from that same address is served: it closes one that waits, never waits itself
        with connect(registry.url, "127.0.0.77") as sock:
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            assert read_all(sock).startswith(b"HTTP/1.1 200")
    finally:
        for sock in held:
            sock.close()


@pytest.mark.parametrize(
    ("open_files", "bound"),
    [
        (1024, 1024 - http_limits.FILES_KEPT),  # a default soft limit, if it could not be raised
        (20_000, http_limits.MAX_CONNECTIONS),  # the limit leaves room for more than the bound
        (100, 16),  # a limit too low to serve well still serves a few
    ],
)
def test_connections_are_bounded_by_the_files_a_process_may_open(open_files: int, bound: int) -> None:
    assert http_limits.connection_bound(open_files) == bound


def test_the_open_file_limit_is_raised_to_the_hard_limit() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(soft, 512), hard))
    try:
        assert http_limits.raised_open_files() == hard == resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, resource.getrlimit(resource.RLIMIT_NOFILE)[0]), hard))

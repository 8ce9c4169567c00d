"""The registry's connections are bounded before any route runs, on the real server over real sockets: a request's
head in bytes and in time, and a client that goes away mid-upload ends its request quietly."""

from __future__ import annotations

import socket
import time
from urllib.parse import urlsplit

import httpx
import pytest

from kindgi_eval.registry import http_limits
from kindgi_eval_tests.registry.conftest import suite


def connect(url: str) -> socket.socket:
    parts = urlsplit(url)
    return socket.create_connection((parts.hostname, parts.port), timeout=10)


def read_all(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection."""
    chunks = []
    while chunk := sock.recv(65536):
        chunks.append(chunk)
    return b"".join(chunks)


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
        assert read_all(sock) == b""  # closed by the server, unanswered
        sock.close()


@pytest.mark.parametrize("sent", [0, 1000])
def test_an_upload_its_client_abandons_ends_quietly(registry, caller, sent, caplog) -> None:
    me = caller()
    body = suite(me.tenant, f"{me.tenant}.gone").__repr__().encode()[:sent]
    counted = registry.app.state.aborted_uploads
    with connect(registry.url) as sock:
        sock.sendall(b"POST /v1/eval-suites HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 5000\r\n"
                     + f"Authorization: Bearer {me.secret}\r\n\r\n".encode() + body)
        sock.shutdown(socket.SHUT_WR)
        time.sleep(0.3)
    for _ in range(100):  # the server sees the connection go, then ends the request
        if registry.app.state.aborted_uploads > counted:
            break
        time.sleep(0.02)
    assert registry.app.state.aborted_uploads == counted + 1
    assert "Traceback" not in caplog.text and "ClientDisconnect" not in caplog.text
    assert httpx.get(f"{registry.url}/healthz").status_code == 200

"""The suite registry under a tenant's attacks: does another client's `/healthz` stay fast, and the server small?

`kindgi-eval serve` runs as a process of its own on 127.0.0.1 (SQLite in a temporary runtime folder). For each attack
a prober asks `/healthz` every 20 ms on a connection of its own, from before the attack starts until it ends, and the
server's resident memory is read from /proc. Prints, per attack, the probes' p50, p99 and worst latency, the
server's peak memory and how much the attack added, beside the goals (healthz within 100 ms; the server's memory
bound in benchmarks/README.md).

    .venv/bin/python benchmarks/registry_attacks.py [--seconds 4]     # about a minute; --quick: each attack a tenth (a check that it runs)
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import httpx

CLI = Path(sys.executable).parent / "kindgi-eval"
SCALE = 1.0
"""How much of each attack is made: `--quick` makes a tenth."""
SLOW_SECONDS = 12.0
"""How long the slow clients last: past the server's 10 s for a head, so it closes them and they come back."""
PER_ADDRESS = 50
"""Slow connections from each loopback address: under the server's bound of waiting connections per address."""


def scaled(n: int) -> int:
    return max(1, round(n * SCALE))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def connect(url: str, timeout_s: float, source: str | None = None) -> socket.socket:
    """A raw connection to the server at `url` (`http://host:port`), for requests no HTTP client would send; from
    `source`, another address of the loopback network, if given."""
    host, port = url.removeprefix("http://").split(":")
    return socket.create_connection(
        (host, int(port)), timeout=timeout_s, source_address=(source, 0) if source else None
    )


def rss_mib(pid: int) -> tuple[float, float]:
    """The process's resident memory now and at its peak (VmRSS, VmHWM), in MiB."""
    fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
    return int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024


class Probe(threading.Thread):
    """`/healthz` every 20 ms on a connection of its own; each answer's latency, or the time it took to fail."""

    def __init__(self, url: str) -> None:
        super().__init__(daemon=True)
        self.url, self.stop, self.latencies, self.answered = url, threading.Event(), [], 0

    def run(self) -> None:
        with httpx.Client(timeout=10) as http:
            while not self.stop.is_set():
                started = time.perf_counter()
                try:
                    self.answered += http.get(f"{self.url}/healthz").status_code == 200
                except httpx.HTTPError:
                    pass
                self.latencies.append((time.perf_counter() - started) * 1000)
                time.sleep(0.02)


def slow_clients(count: int) -> Callable[[str, str, float], str]:
    """`count` connections, each sending a header line every 2 s, while an honest client publishes every 100 ms."""

    def attack(url: str, token: str, seconds: float) -> str:  # lasts SLOW_SECONDS, whatever `seconds` says
        n = scaled(count)
        sources = [f"127.1.{i // PER_ADDRESS // 250}.{i // PER_ADDRESS % 250 + 1}" for i in range(n)]
        held: list[socket.socket | None] = [None] * n
        reopened = 0

        def opened(i: int) -> socket.socket | None:
            try:
                sock = connect(url, 5, sources[i])
                sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
                return sock
            except OSError:
                return None

        statuses: list[int] = []
        stop = threading.Event()

        def publish() -> None:
            with httpx.Client(headers={"Authorization": f"Bearer {token}"}, timeout=30) as http:
                k = 0
                while not stop.is_set():
                    document = {
                        "id": f"acme.honest{count}",
                        "tenantId": "acme",
                        "version": f"1.0.{k}",
                        "kind": "conversation",
                        "spec": {"cases": [{"id": "c", "text": "hi", "expect": {"escalate": False}}]},
                    }
                    try:
                        statuses.append(http.post(f"{url}/v1/eval-suites", json=document).status_code)
                    except httpx.HTTPError:
                        statuses.append(0)
                    k += 1
                    time.sleep(0.1)

        for i in range(n):
            held[i] = opened(i)
        publisher = threading.Thread(target=publish)
        publisher.start()
        deadline = time.monotonic() + SLOW_SECONDS
        while time.monotonic() < deadline:
            time.sleep(min(2.0, max(0.0, deadline - time.monotonic())))
            for i, sock in enumerate(held):
                try:
                    if sock is None:
                        raise OSError
                    sock.sendall(b"X-Slow: 1\r\n")
                except OSError:  # closed by the server (10 s for a head): come back at once
                    if sock is not None:
                        sock.close()
                    held[i], reopened = opened(i), reopened + 1
        stop.set()
        publisher.join()
        for sock in held:
            if sock is not None:
                sock.close()
        created = sum(s == 201 for s in statuses)
        return (
            f"honest publishes answered 201: {created} of {len(statuses)}; {n:,} slow from {len(set(sources))} addresses, "
            f"{reopened:,} opened again after the server closed them"
        )

    return attack


def header_flood(url: str, token: str, seconds: float) -> None:
    """Twenty connections, each sending a 16 MiB header line."""

    def one() -> None:
        try:
            with connect(url, seconds + 5) as sock:
                sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Pad: ")
                for _ in range(256):
                    sock.sendall(b"a" * 65536)
        except OSError:
            pass  # the server closed it past its bound

    threads = [threading.Thread(target=one) for _ in range(scaled(20))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def unfinished_heads(url: str, token: str, seconds: float) -> None:
    """A thousand connections, each sending the start of a request and never the end of its head."""
    held = []
    for _ in range(scaled(1000)):
        try:
            sock = connect(url, 5)
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
            held.append(sock)
        except OSError:
            break
    time.sleep(seconds)
    for sock in held:
        sock.close()


def nested_patterns(url: str, token: str, seconds: float) -> None:
    """Eight publishes at once of an accuracy suite whose regex is `(?:x{65535}){65535}`."""
    spec = {
        "cases": [{"input": "x", "expectedOutput": "x"}],
        "grader": {"adapterId": "regex", "config": {"pattern": "(?:x{65535}){65535}"}},
    }

    def one(n: int) -> None:
        document = {
            "id": f"acme.re{n}",
            "tenantId": "acme",
            "version": "1.0.0",
            "kind": "accuracy",
            "description": "",
            "spec": spec,
        }
        httpx.post(f"{url}/v1/eval-suites", json=document, headers={"Authorization": f"Bearer {token}"}, timeout=60)

    threads = [threading.Thread(target=one, args=(n,)) for n in range(scaled(8))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def long_listings(url: str, token: str, seconds: float) -> None:
    """Eight clients listing, for `seconds`, a tenant's 20 suites with 850 KB descriptions (published beforehand)."""
    deadline = time.monotonic() + seconds

    def one() -> None:
        with httpx.Client(headers={"Authorization": f"Bearer {token}"}, timeout=60) as http:
            while time.monotonic() < deadline:
                http.get(f"{url}/v1/eval-suites", params={"limit": 100})

    threads = [threading.Thread(target=one) for _ in range(scaled(8))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def aborted_uploads(url: str, token: str, seconds: float) -> None:
    """Two hundred publishes whose client sends half its body, then goes away."""
    for _ in range(scaled(200)):
        with connect(url, 5) as sock:
            sock.sendall(
                b"POST /v1/eval-suites HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 5000\r\n"
                + f"Authorization: Bearer {token}\r\n\r\n".encode()
                + b'{"id": "acme.gone", '
            )


ATTACKS: list[tuple[str, Callable[[str, str, float], str | None]]] = [
    ("1,000 slow clients (a header line / 2 s)", slow_clients(1000)),
    ("5,000 slow clients (a header line / 2 s)", slow_clients(5000)),
    ("20 header lines of 16 MiB", header_flood),
    ("1,000 unfinished request heads", unfinished_heads),
    ("8 publishes of (?:x{65535}){65535}", nested_patterns),
    ("8 clients listing 850 KB descriptions", long_listings),
    ("200 uploads abandoned mid-body", aborted_uploads),
]


def main() -> None:
    global SCALE, SLOW_SECONDS
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=4.0, help="how long the attacks that last do")
    parser.add_argument("--slow-seconds", type=float, default=SLOW_SECONDS, help="how long the slow clients last")
    parser.add_argument(
        "--quick", action="store_true", help="a tenth of each attack, for half a second: a check that it runs"
    )
    args = parser.parse_args()
    SLOW_SECONDS = args.slow_seconds
    if args.quick:
        SCALE, args.seconds, SLOW_SECONDS = 0.1, 0.5, 0.5
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # this client holds five thousand sockets
    home = Path(tempfile.mkdtemp(prefix="kindgi-attacks-"))
    env = {**os.environ, "KINDGI_HOME": str(home), "DAGSTER_HOME": str(home / "dagster")}
    token = subprocess.run(
        [str(CLI), "tokens", "issue", "--tenant", "acme"], env=env, capture_output=True, text=True, check=True
    ).stdout.strip()
    port = free_port()
    server = subprocess.Popen(
        [str(CLI), "serve", "--port", str(port)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(200):
            try:
                httpx.get(f"{url}/healthz")
                break
            except httpx.HTTPError:
                time.sleep(0.05)
        long = "A description a tenant made long. " * 25_000
        for n in range(scaled(20)):
            document = {
                "id": f"acme.s{n}",
                "tenantId": "acme",
                "version": "1.0.0",
                "kind": "conversation",
                "description": long,
                "spec": {"cases": [{"id": "c", "text": "hi", "expect": {"escalate": False}}]},
            }
            httpx.post(
                f"{url}/v1/eval-suites",
                content=json.dumps(document),
                headers={"Authorization": f"Bearer {token}"},
                timeout=60,
            )
        print(
            f"kindgi-eval serve on 127.0.0.1 (SQLite), pid {server.pid}; /healthz probed every 20 ms during each attack"
        )
        print(f"{'attack':<42} {'healthz p50':>12} {'p99':>8} {'worst':>8} {'200s':>9}   server RSS peak (added)")
        for name, attack in ATTACKS:
            _, peak_before = rss_mib(server.pid)
            probe = Probe(url)
            probe.start()
            time.sleep(0.2)
            note = attack(url, token, args.seconds)
            time.sleep(0.3)
            probe.stop.set()
            probe.join()
            latencies = sorted(probe.latencies)
            p99 = latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))]
            _, peak = rss_mib(server.pid)
            print(
                f"{name:<42} {statistics.median(latencies):>9.1f} ms {p99:>5.1f} ms {max(latencies):>5.1f} ms "
                f"{probe.answered:>4}/{len(latencies):<4}   {peak:6.0f} MiB ({peak - peak_before:+.0f})"
            )
            if note:
                print(f"    {note}")
        print(
            "goals: /healthz p99 within 100 ms and every probe 200 under every attack; every honest publish 201; "
            "the server under the memory bound of benchmarks/README.md"
        )
    finally:
        server.terminate()
        server.wait(timeout=10)


if __name__ == "__main__":
    main()

"""The suite registry under load: 32 concurrent clients on 127.0.0.1, GET latest and publish, per backend.

Prints requests per second and p50/p99 latency for each, beside a bare uvicorn handler that returns a
constant (the ceiling this machine and uvicorn allow), and the ratio between them. Goals on a 2-core
machine: GET at least 1,000 requests/s with p99 under 25 ms; publish at least 200 versions/s.

GET latest is measured twice. Closed loop: each client sends its next request as soon as the last is answered,
so the rate is the most the server gives and, by Little's law, the mean latency is clients / rate. Open loop: the
clients together offer a fixed `--rate` (1,000 requests/s, the goal), each on its own schedule, and a latency is
counted from when its request was due, so a late server is charged for the wait it causes. Each line also says how
much CPU the client and the server spent, since the machine is shared and the rate alone cannot tell which one ran
short.

    .venv/bin/python benchmarks/registry.py [--clients 32] [--seconds 5] [--rate 1000] [--postgres URL]
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import NamedTuple

import httpx
import uvicorn

WARMUP = 0.5
"""Seconds of load before the clock starts: the clients' connections are opened, and the server's first reads done."""
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from kindgi_eval.kinds import consumers
from kindgi_eval.registry import open_store, running_server  # noqa: E402


class Load(NamedTuple):
    """What one figure's load measured."""

    count: int
    """Requests answered that were sent after the warm-up."""
    latencies: list[float]
    """Each of those requests' latency, ms."""
    client_cpu: float
    """The load generator's process: CPU seconds a second, warm-up included (1.0 is one core)."""
    server_cpu: float
    """CPU seconds this process (the server's threads) spent a request, warm-up included."""


def load(url: str, clients: int, seconds: float, kind: str, token: str = "", rate: float | None = None) -> Load:
    """The load of one figure, generated in a process of its own so the client never shares the server's GIL;
    `rate` None is a closed loop, else the requests per second offered in all."""
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        pool.apply(time.sleep, (0,))  # the child is up and has imported this module before the clock starts
        started = time.process_time()
        latencies, sent, client_cpu = pool.apply(_load_in_child, (url, clients, seconds, kind, token, rate))
        return Load(
            len(latencies), latencies, client_cpu / (WARMUP + seconds), (time.process_time() - started) / max(sent, 1)
        )


def _load_in_child(
    url: str, clients: int, seconds: float, kind: str, token: str, rate: float | None
) -> tuple[list[float], int, float]:
    auth = {"Authorization": f"Bearer {token}"}

    async def request(http, client: int, n: int) -> int:
        if kind == "constant":
            async with http.get(url + "/") as response:
                await response.read()
                return response.status
        if kind == "get":
            async with http.get(url + "/v1/eval-suites/acme.bench", headers=auth) as response:
                await response.read()
                return response.status
        # each client publishes its own suite's versions, in order, so every publish is a new version
        body = suite_body(f"1.{n}.0") | {"id": f"acme.bench-{client}"}
        async with http.post(url + "/v1/eval-suites", json=body, headers=auth) as response:
            await response.read()
            return response.status

    started = time.process_time()
    latencies, sent = _run(_load(clients, seconds, request, rate))
    return latencies, sent, time.process_time() - started


def _run(main):
    """Run the client on uvloop when it is installed (it spends less CPU than asyncio's own loop), else asyncio."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run(main)
    return uvloop.run(main)


async def _load(clients: int, seconds: float, request, rate: float | None = None) -> tuple[list[float], int]:
    """`clients` loops sending `request(client, n)` for WARMUP and then `seconds`; the latency in ms of each request
    sent after the warm-up, and how many were sent in all.

    Closed loop when `rate` is None; otherwise client c's n-th request is due at (c + n * clients) / rate seconds,
    and its latency counts from then (a request that could not be sent on time waits, and that wait is latency).
    aiohttp drives the load: it spends far less CPU a request than httpx, so the figure is the server's."""
    import aiohttp

    latencies: list[float] = []
    sent = 0
    start = time.perf_counter()
    clock, stop = start + WARMUP, start + WARMUP + seconds
    connector = aiohttp.TCPConnector(limit=clients)
    async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=30)) as http:

        async def loop(client: int) -> None:
            nonlocal sent
            n = 0
            due = start + client / rate if rate else start
            while due < stop and time.perf_counter() < stop:
                if rate:
                    await asyncio.sleep(max(0.0, due - time.perf_counter()))
                else:
                    due = time.perf_counter()
                status = await request(http, client, n)
                if due >= clock:
                    latencies.append((time.perf_counter() - due) * 1000)
                assert status < 300, status
                n += 1
                sent += 1
                due += clients / rate if rate else 0

        await asyncio.gather(*(loop(c) for c in range(clients)))
    return latencies, sent


def _line(name: str, measured: Load, seconds: float) -> float:
    rate = measured.count / seconds
    latencies = measured.latencies
    cuts = statistics.quantiles(latencies, n=100) if len(latencies) > 1 else [latencies[0]] * 99
    print(
        f"  {name:<26} {rate:7.0f} req/s   p50 {cuts[49]:5.1f} ms   p99 {cuts[98]:5.1f} ms   "
        f"CPU: client {measured.client_cpu:4.0%} of a core, server {measured.server_cpu * 1e6:4.0f} us a request"
    )
    return rate


def bare_server() -> tuple[str, uvicorn.Server]:
    """A uvicorn app that answers a constant: what the machine allows before any registry work."""

    async def app(scope, receive, send):
        if scope["type"] != "http":
            return
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": b'{"ok":true}'})

    config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="error", access_log=False)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    return f"http://127.0.0.1:{port}", server


def suite_body(version: str) -> dict:
    return {
        "id": "acme.bench",
        "tenantId": "acme",
        "version": version,
        "kind": "conversation",
        "description": "benchmark",
        "spec": {"cases": [{"id": "price", "text": "How much is it?", "expect": {"escalate": False}}]},
    }


def bench_backend(name: str, url: str, clients: int, seconds: float, bare_get: float, offered: float) -> None:
    store = open_store(url)
    token = store.issue_token("acme", "bench").secret
    auth = {"Authorization": f"Bearer {token}"}
    with running_server(store, consumers(), port=0) as server:
        httpx.post(f"{server.url}/v1/eval-suites", json=suite_body("0.0.1"), headers=auth).raise_for_status()

        print(f"{name}:")
        rate = _line("GET latest, closed loop", load(server.url, clients, seconds, "get", token), seconds)
        print(f"  {'':<26} ratio to the bare handler {rate / bare_get:.2f}  (goal >= 1000 req/s)")
        _line(
            f"GET latest, open {offered:g}/s", load(server.url, clients, seconds, "get", token, rate=offered), seconds
        )
        print(f"  {'':<26} (goal p99 < 25 ms at 1000 req/s offered)")
        _line("publish, closed loop", load(server.url, clients, seconds, "publish", token), seconds)
        print(f"  {'':<26} (goal >= 200 versions/s)")
    store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--rate", type=float, default=1000.0, help="requests/s offered in the open-loop GET figure")
    parser.add_argument("--postgres", help="a SQLAlchemy URL of an empty PostgreSQL database to bench as well")
    args = parser.parse_args()

    url, bare = bare_server()

    print(f"{args.clients} clients, {args.seconds:g} s per figure, 127.0.0.1, load from a process of its own")
    bare_get = _line("bare uvicorn constant", load(url, args.clients, args.seconds, "constant"), args.seconds)
    bare.should_exit = True
    with tempfile.TemporaryDirectory() as tmp:
        bench_backend("SQLite", f"sqlite:///{tmp}/registry.sqlite", args.clients, args.seconds, bare_get, args.rate)
    if args.postgres:
        bench_backend("PostgreSQL", args.postgres, args.clients, args.seconds, bare_get, args.rate)


if __name__ == "__main__":
    main()

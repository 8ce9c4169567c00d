"""The suite registry under load: 32 concurrent clients on 127.0.0.1, GET latest and publish, per backend.

Prints requests per second and p50/p99 latency for each, beside a bare uvicorn handler that returns a
constant (the ceiling this machine and uvicorn allow), and the ratio between them. Goals on a 2-core
machine: GET at least 1,000 requests/s with p99 under 25 ms; publish at least 200 versions/s.

    .venv/bin/python benchmarks/registry.py [--clients 32] [--seconds 5] [--postgres URL]
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

import httpx
import uvicorn

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from kindgi_eval.registry import open_store, running_server  # noqa: E402


def load(url: str, clients: int, seconds: float, kind: str, token: str = "") -> tuple[int, list[float]]:
    """The load of one figure, generated in a process of its own so the client never shares the server's GIL."""
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        return pool.apply(_load_in_child, (url, clients, seconds, kind, token))


def _load_in_child(url: str, clients: int, seconds: float, kind: str, token: str) -> tuple[int, list[float]]:
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

    return asyncio.run(_load(clients, seconds, request))


async def _load(clients: int, seconds: float, request) -> tuple[int, list[float]]:
    """`clients` loops sending `request(client, n)` for `seconds`; the count and every latency in ms.

    aiohttp drives the load: it spends far less CPU a request than httpx, so the figure is the server's."""
    import aiohttp

    latencies: list[float] = []
    stop = time.perf_counter() + seconds
    connector = aiohttp.TCPConnector(limit=clients)
    async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=30)) as http:

        async def loop(client: int) -> None:
            n = 0
            while time.perf_counter() < stop:
                started = time.perf_counter()
                status = await request(http, client, n)
                latencies.append((time.perf_counter() - started) * 1000)
                assert status < 300, status
                n += 1

        await asyncio.gather(*(loop(c) for c in range(clients)))
    return len(latencies), latencies


def _line(name: str, count: int, latencies: list[float], seconds: float) -> float:
    rate = count / seconds
    cuts = statistics.quantiles(latencies, n=100) if len(latencies) > 1 else [latencies[0]] * 99
    print(f"  {name:<22} {rate:8.0f} req/s   p50 {cuts[49]:6.1f} ms   p99 {cuts[98]:6.1f} ms")
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


def bench_backend(name: str, url: str, clients: int, seconds: float, bare_get: float) -> None:
    store = open_store(url)
    token = store.issue_token("acme", "bench").secret
    auth = {"Authorization": f"Bearer {token}"}
    with running_server(store, port=0) as server:
        httpx.post(f"{server.url}/v1/eval-suites", json=suite_body("0.0.1"), headers=auth).raise_for_status()

        print(f"{name}:")
        count, latencies = load(server.url, clients, seconds, "get", token)
        rate = _line("GET latest", count, latencies, seconds)
        print(f"  {'':<22} ratio to the bare handler {rate / bare_get:.2f}  (goal >= 1000 req/s, p99 < 25 ms)")
        count, latencies = load(server.url, clients, seconds, "publish", token)
        _line("publish", count, latencies, seconds)
        print(f"  {'':<22} (goal >= 200 versions/s)")
    store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--postgres", help="a SQLAlchemy URL of an empty PostgreSQL database to bench as well")
    args = parser.parse_args()

    url, bare = bare_server()

    print(f"{args.clients} clients, {args.seconds:g} s per figure, 127.0.0.1, load from a process of its own")
    count, latencies = load(url, args.clients, args.seconds, "constant")
    bare_get = _line("bare uvicorn constant", count, latencies, args.seconds)
    bare.should_exit = True
    with tempfile.TemporaryDirectory() as tmp:
        bench_backend("SQLite", f"sqlite:///{tmp}/registry.sqlite", args.clients, args.seconds, bare_get)
    if args.postgres:
        bench_backend("PostgreSQL", args.postgres, args.clients, args.seconds, bare_get)


if __name__ == "__main__":
    main()

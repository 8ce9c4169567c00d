"""The suite registry while one tenant floods it with costly publishes: do another tenant's reads stay fast, and is
every publish answered in time?

`kindgi-eval serve` runs as a process of its own on 127.0.0.1 (SQLite in a temporary runtime folder). Tenant acme
reads its suite's latest version back to back, first alone, then while tenant globex publishes from `--flooders`
connections at once for `--seconds`, in two shapes: suites of 72 KB of patterns too costly to compile (what took
three publishes 195 s before the bounds), and suites near the bounds of what one suite's patterns may cost, which are
accepted. Prints acme's read latency (p50, p99, worst) alone and in each flood, its ratio, the goal (within 2x of
the idle latency or 20 ms more, whichever is larger), and globex's publishes: how many, their answers, the slowest
(goal: each within 30 s).

    .venv/bin/python benchmarks/registry_flood.py [--seconds 20] [--flooders 8]
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

import httpx

CLI = Path(sys.executable).parent / "kindgi-eval"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def costly(version: str, n: int) -> dict:
    """72 KB of patterns of some 400,000 RE2 instructions each (170 ms each to compile, and accepted, before)."""
    outputs = [r"[\pL\pN]{300}"] * 5_000
    return accuracy(f"globex.costly{n}", version, outputs)


def near_the_bound(version: str, n: int) -> dict:
    """50 patterns of some 9,400 instructions each: accepted, near the suite's bound of 500,000 in all."""
    return accuracy(f"globex.heavy{n}", version, [r"[\pL\pN]{7}" + str(k) for k in range(50)])


def accuracy(suite_id: str, version: str, outputs: list[str]) -> dict:
    spec = {
        "cases": [{"input": f"q{k}", "expectedOutput": o} for k, o in enumerate(outputs)],
        "grader": {"adapterId": "regex"},
    }
    return {
        "id": suite_id,
        "tenantId": "globex",
        "version": version,
        "kind": "accuracy",
        "description": "",
        "spec": spec,
    }


def read_latencies(url: str, token: str, stop: threading.Event) -> list[float]:
    """acme's reads of its suite, back to back with 5 ms between, until `stop`; each one's latency in ms."""
    latencies = []
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=60) as http:
        while not stop.is_set():
            started = time.perf_counter()
            assert http.get("/v1/eval-suites/acme.golden").status_code == 200
            latencies.append((time.perf_counter() - started) * 1000)
            time.sleep(0.005)
    return latencies


def flood(url: str, token: str, make, flooders: int, seconds: float) -> tuple[list[float], Counter]:
    """globex publishing `make(version, n)` from `flooders` connections for `seconds`: each answer's time and status."""
    times: list[float] = []
    statuses: Counter = Counter()
    deadline = time.monotonic() + seconds

    def one(n: int) -> None:
        with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=120) as http:
            k = 0
            while time.monotonic() < deadline:
                started = time.perf_counter()
                statuses[http.post("/v1/eval-suites", json=make(f"1.0.{k}", n)).status_code] += 1
                times.append(time.perf_counter() - started)
                k += 1

    threads = [threading.Thread(target=one, args=(n,)) for n in range(flooders)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return times, statuses


def figures(latencies: list[float]) -> tuple[float, float, float]:
    ordered = sorted(latencies)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))], ordered[-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20.0, help="how long each flood lasts")
    parser.add_argument("--flooders", type=int, default=8, help="globex's connections publishing at once")
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="kindgi-flood-"))
    env = {**os.environ, "KINDGI_HOME": str(home), "DAGSTER_HOME": str(home / "dagster")}
    tokens = {
        tenant: subprocess.run(
            [str(CLI), "tokens", "issue", "--tenant", tenant], env=env, capture_output=True, text=True, check=True
        ).stdout.strip()
        for tenant in ("acme", "globex")
    }
    port = free_port()
    server = subprocess.Popen(
        [str(CLI), "serve", "--port", str(port)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(400):
            try:
                httpx.get(f"{url}/healthz")
                break
            except httpx.HTTPError:
                time.sleep(0.05)
        document = {
            "id": "acme.golden",
            "tenantId": "acme",
            "version": "1.0.0",
            "kind": "conversation",
            "spec": {"cases": [{"id": "c", "text": "hi", "expect": {"escalate": False}}]},
        }
        assert (
            httpx.post(
                f"{url}/v1/eval-suites",
                json=document,
                headers={"Authorization": f"Bearer {tokens['acme']}"},
                timeout=60,
            ).status_code
            == 201
        )
        time.sleep(3)  # the worker that checks publishes has started
        stop = threading.Event()
        found: list[list[float]] = []
        reader = threading.Thread(target=lambda: found.append(read_latencies(url, tokens["acme"], stop)))
        reader.start()
        time.sleep(5)
        stop.set()
        reader.join()
        idle = figures(found[0])
        goal = max(2 * idle[0], idle[0] + 20)
        print(
            f"kindgi-eval serve on 127.0.0.1 (SQLite), pid {server.pid}; {args.flooders} globex connections publishing "
            f"for {args.seconds:g} s; acme reading its suite back to back"
        )
        print(f"{'acme reads':<44} {'p50':>9} {'p99':>9} {'worst':>9}  p50 ratio  globex publishes (answers, slowest)")
        print(f"{'alone':<44} {idle[0]:>6.1f} ms {idle[1]:>6.1f} ms {idle[2]:>6.1f} ms")
        for name, make in (
            ("flood: 72 KB of too-costly patterns", costly),
            ("flood: suites near the patterns' bound", near_the_bound),
        ):
            stop = threading.Event()
            found = []
            reader = threading.Thread(target=lambda: found.append(read_latencies(url, tokens["acme"], stop)))
            reader.start()
            times, statuses = flood(url, tokens["globex"], make, args.flooders, args.seconds)
            stop.set()
            reader.join()
            p50, p99, worst = figures(found[0])
            answers = ", ".join(f"{count} x {status}" for status, count in sorted(statuses.items()))
            print(
                f"{name:<44} {p50:>6.1f} ms {p99:>6.1f} ms {worst:>6.1f} ms  {p50 / idle[0]:>8.2f}x  {len(times)}: {answers}; "
                f"slowest {max(times):.1f} s"
            )
        print(
            f"goals: acme's p50 within {goal:.1f} ms (2x its idle p50, or 20 ms more, whichever is larger); "
            "each globex publish answered within 30 s"
        )
    finally:
        server.terminate()
        server.wait(timeout=30)


if __name__ == "__main__":
    main()

"""Big inputs in bounded memory: the peak RSS of a process validating a suite file at the limit and one far over it,
and of an HTTP agent answered with 1 MB and 50 MB bodies, against the bounds benchmarks/README.md states.

    .venv/bin/python benchmarks/big_inputs.py [--suite-mb 50] [--body-mb 1 50] [--skip-at-limit]

Each figure is one fresh process, measured by the kernel (`ru_maxrss` of that child alone): `kindgi-eval validate`
for a suite, a small Python client for the HTTP agent, served by this process (so the body it sends is not counted).
A suite file over SUITE_FILE_LIMIT is refused before it is read (exit 2); an answer over BODY_LIMIT is refused as
that case's error once the limit is read. Exits 1 when a figure is over its bound.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import NamedTuple

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from kindgi_eval.agents.http import BODY_LIMIT
from kindgi_eval.inputs.file_limits import SUITE_FILE_LIMIT, mib

CLI = Path(sys.executable).parent / "kindgi-eval"
MB = 1_000_000
AT_LIMIT_BOUND_MB = 400
"""Validating a suite file at SUITE_FILE_LIMIT peaks under this (the bound benchmarks/README.md states)."""
REFUSED_OVER_BASELINE_MB = 16
"""Refusing a file over its limit, or an answer over BODY_LIMIT, adds at most this to the same process on a small input."""
CLIENT = """
import asyncio, sys
from kindgi_eval.agents.http import HttpAgent
from kindgi_eval.rules.agent_protocol import AgentTurn
from kindgi_eval.steps.agent_replies import collect_replies
turn = AgentTurn(tenant="demo-academy", case_id="big", text="how much is the foundation course?")
(row,) = asyncio.run(collect_replies(HttpAgent(sys.argv[1], timeout_s=60), [turn], concurrency=1, deadline_ms=60_000))
print(row.error or f"a reply of {sum(map(len, row.messages)):,} characters")
"""


class Measured(NamedTuple):
    """One child process: its peak resident memory, how long it took, its exit status and its last line of output."""

    peak_mb: float
    seconds: float
    code: int
    said: str


def measure(*argv: str) -> Measured:
    """Run a child and read its own peak RSS from the kernel (wait4 reports that child alone)."""
    started = time.perf_counter()
    child = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=REPO)
    out = child.stdout.read().decode(errors="replace") if child.stdout else ""
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    lines = out.strip().splitlines() or [""]
    return Measured(usage.ru_maxrss / 1024, time.perf_counter() - started, child.returncode, lines[-1][:150])


def write_suite(folder: Path, size: int) -> Path:
    """A cases.jsonl of at least `size` bytes: the golden cases repeated, each under a new id."""
    folder.mkdir(parents=True, exist_ok=True)
    golden = [json.loads(line) for line in (REPO / "evals/golden/cases.jsonl").read_text().splitlines() if line.strip()]
    written = 0
    with open(folder / "cases.jsonl", "w") as f:
        n = 0
        while written < size:
            line = json.dumps({**golden[n % len(golden)], "id": f"case-{n}"}) + "\n"
            f.write(line)
            written += len(line)
            n += 1
    return folder


class _Body(BaseHTTPRequestHandler):
    """Answers every POST with a reply padded to `?bytes=N`, without a Content-Length: read until the server closes."""

    protocol_version = "HTTP/1.0"

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        size = int(self.path.rsplit("=", 1)[1])
        head = json.dumps({"messages": ["x" * max(0, size - 60)], "escalate": False, "reason": None}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        try:
            self.wfile.write(head[:size])
            left = size - len(head)
            while left > 0:
                step = min(left, 1 << 20)
                self.wfile.write(b" " * step)
                left -= step
        except (BrokenPipeError, ConnectionResetError):
            pass  # the agent stopped reading at its limit

    def log_message(self, *args: object) -> None:
        pass


def row(what: str, m: Measured, bound_mb: float | None) -> bool:
    verdict = "" if bound_mb is None else f"bound {bound_mb:.0f} MB: {'ok' if m.peak_mb <= bound_mb else 'OVER'}"
    print(f"{what:<44} peak RSS {m.peak_mb:6.0f} MB  {m.seconds:5.1f} s  exit {m.code}  {verdict}\n    {m.said}")
    return bound_mb is None or m.peak_mb <= bound_mb


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--suite-mb", type=float, default=50, help="size of the suite file over the limit, in MB")
    parser.add_argument(
        "--body-mb", type=float, nargs="+", default=[1, 50], help="sizes of the HTTP agent's bodies, in MB"
    )
    parser.add_argument(
        "--skip-at-limit", action="store_true", help="skip validating a suite at the limit (the slow part)"
    )
    args = parser.parse_args()
    print(f"limits: a suite file {mib(SUITE_FILE_LIMIT)}, an HTTP agent's answer {mib(BODY_LIMIT)}")
    held = True
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        base = measure(str(CLI), "validate", str(REPO / "evals/golden"))
        row("validate, the golden suite", base, None)
        if not args.skip_at_limit:
            at_limit = write_suite(folder / "at-limit", SUITE_FILE_LIMIT - 4096)
            held &= row(
                f"validate, a suite at the limit ({mib((at_limit / 'cases.jsonl').stat().st_size)})",
                measure(str(CLI), "validate", str(at_limit)),
                AT_LIMIT_BOUND_MB,
            )
        over = write_suite(folder / "over", int(args.suite_mb * MB))
        refused = measure(str(CLI), "validate", str(over))
        held &= row(f"validate, a {args.suite_mb:g} MB suite", refused, base.peak_mb + REFUSED_OVER_BASELINE_MB)
        held &= refused.code == 2

        server = ThreadingHTTPServer(("127.0.0.1", 0), _Body)
        server.daemon_threads = True
        serving = threading.Thread(target=server.serve_forever, daemon=True)
        serving.start()
        try:
            url = f"http://127.0.0.1:{server.server_address[1]}/reply?bytes="
            small = measure(sys.executable, "-c", CLIENT, url + "100")
            row("http agent, a 100-byte answer", small, None)
            for size_mb in args.body_mb:
                answered = measure(sys.executable, "-c", CLIENT, url + str(int(size_mb * MB)))
                held &= row(f"http agent, a {size_mb:g} MB answer", answered, small.peak_mb + REFUSED_OVER_BASELINE_MB)
        finally:
            server.shutdown()
            server.server_close()
            serving.join(timeout=5)
    print("every figure within its bound" if held else "a figure is over its bound")
    return 0 if held else 1


if __name__ == "__main__":
    sys.exit(main())

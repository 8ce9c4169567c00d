"""A whole `kindgi-eval run --agent-model openai:...` process, start to exit, against a local OpenAI-compatible
server answering after 200 ms, on generated suites of 1 and 400 one-turn cases; beside it, in processes of their own
making the same calls, a bare litellm script (`import litellm`, the calls through `litellm.acompletion` under a
semaphore, exit: the honest floor, since every model call of a run goes through litellm) and a bare asyncio +
aiohttp loop; and the offline golden run (`run --mock`).

    .venv/bin/python benchmarks/whole_run.py [--sizes 1 400] [--concurrency 16 64] [--delay 0.2] [--repeat 3] [--quick]

Prints, for each suite size and concurrency, the median wall time of each process, its three phases (from its start
to the server's first request, the calls, from the server's last reply to its exit, each from the server's own
clock), its CPU per call, the run's peak
memory (from the kernel, wait4's rusage: its largest process's RSS; and from /proc, sampled every 20 ms: the sum over it and
its child processes, as PSS), its CPU time (its processes' user + system), and the run over the bare loop. The goals: N = 1 under 3 s,
N = 400 at most 1.5x the bare loop, 400 cases in at most 240 MB, the golden run under 2.5 s.
The server (chat_server.py) is asyncio (aiohttp) in a forked child, as for agent_calls.py: the fake provider's thread per connection
would share its interpreter lock among 64 threads, and its clock would then be the server's, not the client's.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # for the server's kindgi_eval_tests.fake_provider
sys.path.insert(0, str(REPO / "benchmarks"))  # its neighbour chat_server.py

import chat_server  # noqa: E402

CLI = Path(sys.executable).parent / "kindgi-eval"
MODEL = "bench-agent"
REPLY = json.dumps({"messages": ["The Foundation Course is $450. Would you pay upfront or in instalments?"], "escalate": False, "reason": None})
CASE = {"text": "how much is the foundation course?", "expect": {"escalate": False}, "must_contain": ["$450"]}
KEY = "sk-bench-not-a-key"



class Timed(NamedTuple):
    wall: float
    to_first: float
    after_last: float
    peak_mb: float
    tree_peak_mb: float
    cpu: float
    code: int
    served: int
    peak_in_flight: int
    bodies: list[dict]


def timed(command: list[str], env: dict[str, str], delay: float) -> Timed:
    """One process run to exit against a fresh server: its wall time, the server's view of it, its peak RSS.

    Its peak RSS counts this process's at the fork too (Linux keeps the larger across exec), so this process
    imports nothing of the project's."""
    server, base_url = chat_server.start(delay, REPLY, MODEL)
    try:
        started = time.time()
        tree_peak = 0
        with open(os.devnull, "w") as sink:
            process = subprocess.Popen(command, cwd=REPO, env={**env, "OPENAI_BASE_URL": base_url}, stdout=sink, stderr=sink)
            while True:
                pid, status, usage = os.wait4(process.pid, os.WNOHANG)
                if pid:
                    break
                tree_peak = max(tree_peak, tree_pss_kb(process.pid))
                time.sleep(0.02)
        ended = time.time()
        seen = chat_server.stats(base_url)
    finally:
        server.kill()
        server.join()
    first, last = seen["first_request"] or ended, seen["last_reply"] or ended
    return Timed(ended - started, first - started, ended - last, usage.ru_maxrss / 1024, tree_peak / 1024,
                 usage.ru_utime + usage.ru_stime, os.waitstatus_to_exitcode(status),
                 seen["requests"], seen["peak"], seen["bodies"])


def tree_pss_kb(pid: int) -> int:
    """The proportional set size of a process and all its descendants now, in KB, from /proc (0 once it is gone):
    each page shared between them counted once in all, where their RSS would count it in each."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as rollup:
            pss = next((int(line.split()[1]) for line in rollup if line.startswith("Pss:")), 0)
        with open(f"/proc/{pid}/task/{pid}/children") as children:
            return pss + sum(tree_pss_kb(int(child)) for child in children.read().split())
    except (FileNotFoundError, ProcessLookupError):
        return 0


def median(runs: list[Timed]) -> Timed:
    """Each figure's median over the runs (the exit status and counts of the last)."""
    return Timed(*(statistics.median(getattr(r, f) for r in runs) for f in Timed._fields[:6]), *runs[-1][6:])


def generate(folder: Path, size: int) -> Path:
    """A suite of `size` one-turn cases, each reaching the model."""
    folder.mkdir(parents=True)
    (folder / "cases.jsonl").write_text("".join(json.dumps({"id": f"case-{n:04d}", **CASE}) + "\n" for n in range(size)))
    return folder


def bare_loop(bodies_file: str, concurrency: int) -> None:
    """The floor: the same requests posted by aiohttp under a semaphore, in a process importing nothing else."""
    import aiohttp

    bodies = json.loads(Path(bodies_file).read_text())
    base_url = os.environ["OPENAI_BASE_URL"]

    async def run() -> None:
        slots = asyncio.Semaphore(concurrency)
        headers = {"Authorization": f"Bearer {KEY}"}
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=concurrency)) as session:

            async def one(body: dict) -> str:
                async with slots, session.post(f"{base_url}/chat/completions", json=body, headers=headers) as response:
                    return (await response.json())["choices"][0]["message"]["content"]

            await asyncio.gather(*(one(b) for b in bodies))

    asyncio.run(run())


def bare_litellm(bodies_file: str, concurrency: int) -> None:
    """The floor: the same requests sent through `litellm.acompletion` under a semaphore, in a process that
    imports litellm and nothing of the project's."""
    os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"  # else the import fetches the cost map from the network
    import litellm

    bodies = json.loads(Path(bodies_file).read_text())
    base_url = os.environ["OPENAI_BASE_URL"]

    async def run() -> None:
        slots = asyncio.Semaphore(concurrency)

        async def one(body: dict) -> str:
            async with slots:
                response = await litellm.acompletion(model=f"openai/{body['model']}", messages=body["messages"], api_base=base_url,
                                                     api_key=KEY, response_format=body.get("response_format"))
                return response.choices[0].message.content

        await asyncio.gather(*(one(b) for b in bodies))

    asyncio.run(run())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[1, 400])
    parser.add_argument("--concurrency", type=int, nargs="*", default=[16, 64], help="for suites of more than one case")
    parser.add_argument("--delay", type=float, default=0.2)
    parser.add_argument("--repeat", type=int, default=3, help="runs per figure; the median is shown")
    parser.add_argument("--quick", action="store_true", help="one suite of 2 cases, concurrency 2, no delay, one run each, no warm-up run")
    parser.add_argument("--bare-loop", nargs=2, metavar=("BODIES", "C"), help=argparse.SUPPRESS)
    parser.add_argument("--bare-litellm", nargs=2, metavar=("BODIES", "C"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.bare_loop:
        bare_loop(args.bare_loop[0], int(args.bare_loop[1]))
        return
    if args.bare_litellm:
        bare_litellm(args.bare_litellm[0], int(args.bare_litellm[1]))
        return
    if args.quick:
        args.sizes, args.concurrency, args.delay, args.repeat = [2], [2], 0.0, 1

    load = os.getloadavg()
    print(f"server answering after {args.delay * 1000:.0f} ms; median of {args.repeat}; load average {load[0]:.2f} {load[1]:.2f}")
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "KINDGI_HOME": f"{tmp}/home", "DAGSTER_HOME": f"{tmp}/home/dagster", "OPENAI_API_KEY": KEY}
        for var in ("EVAL_DIR", "AGENT_URL", "AGENT_MODEL", "EVAL_JUDGE_MODEL", "EVAL_CONCURRENCY"):
            env.pop(var, None)
        if not args.quick:
            first = timed([str(CLI), "run", "--mock"], env, args.delay)  # creates the instance's database; not counted
            assert first.code in (0, 1), f"run --mock exited {first.code}"
        golden = median([timed([str(CLI), "run", "--mock"], env, args.delay) for _ in range(args.repeat)])
        print(f"golden set (run --mock): wall {golden.wall:.2f} s, CPU {golden.cpu:.2f} s, peak {golden.peak_mb:.0f} MB, exit {golden.code}  (goal < 2.5 s)")
        for size in args.sizes:
            suite = generate(Path(tmp) / f"suite{size}", size)
            for concurrency in args.concurrency if size > 1 else [1]:
                command = [str(CLI), "run", "--agent-model", f"openai:{MODEL}", "--eval-dir", str(suite), "--concurrency", str(concurrency)]
                ours = median([timed(command, env, args.delay) for _ in range(args.repeat)])
                bodies = Path(tmp) / "bodies.json"  # the bare loop sends the very requests the run sent
                bodies.write_text(json.dumps(ours.bodies))
                floor = median([timed([sys.executable, __file__, "--bare-litellm", str(bodies), str(concurrency)], env, args.delay)
                                for _ in range(args.repeat)])
                bare = median([timed([sys.executable, __file__, "--bare-loop", str(bodies), str(concurrency)], env, args.delay)
                               for _ in range(args.repeat)])
                assert ours.served == floor.served == bare.served == size, f"served {ours.served}, {floor.served}, {bare.served} of {size} calls"
                print(f"N={size:<4} C={concurrency:<3} (goal run / bare litellm <= 1.15), exit {ours.code}, server peak in flight {ours.peak_in_flight}")
                for label, t in (("kindgi-eval run", ours), ("bare litellm", floor), ("bare aiohttp", bare)):
                    calls = t.wall - t.to_first - t.after_last
                    print(f"  {label:<16} wall {t.wall:6.2f} s = to first request {t.to_first:5.2f} s + calls {calls:5.2f} s + after "
                          f"last reply {t.after_last:5.2f} s  CPU {t.cpu:5.2f} s ({t.cpu / size * 1000:.1f} ms per call)  peak RSS "
                          f"{t.peak_mb:4.0f} MB (PSS of all its processes {t.tree_peak_mb:4.0f} MB)")
                print(f"  run / bare litellm: wall {ours.wall / floor.wall:.2f}, peak RSS {ours.peak_mb / floor.peak_mb:.1f};  "
                      f"run / bare aiohttp: wall {ours.wall / bare.wall:.2f}")


if __name__ == "__main__":
    main()

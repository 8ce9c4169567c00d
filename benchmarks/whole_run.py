"""A whole `kindgi-eval run --agent-model openai:...` process, start to exit, against a local OpenAI-compatible
server answering after 200 ms, on generated suites of one-turn cases; beside it, in processes of their own making the
same calls: the same run pointed at a gateway (`--gateway-url`), a bare litellm script, a bare asyncio + aiohttp loop,
and promptfoo; then the judge stage (`judge_calls.py`) and the offline golden run (`run --mock`).

    .venv/bin/python benchmarks/whole_run.py [--sizes 1 400] [--concurrency 16 64] [--delay 0.2] [--repeat 3]
        [--promptfoo PATH] [--arms run gateway litellm aiohttp promptfoo] [--judge-cases 100] [--quick]

The arms, each a process started and waited for as a user would:
- `run`: `kindgi-eval run`, every call through its embedded litellm worker;
- `gateway`: the same run with `--gateway-url` naming the server itself, which speaks the OpenAI-compatible protocol as
  a LiteLLM gateway does: the run imports no litellm, and no proxy's own time is counted;
- `litellm`: `import litellm`, the very requests the run sent through `litellm.acompletion` under a semaphore, exit:
  the floor of the embedded path, since every call of it goes through litellm;
- `aiohttp`: the same requests posted by aiohttp under a semaphore, importing nothing else: the floor of any client;
- `promptfoo`: `promptfoo eval` on the same N calls, each with one substring assertion (promptfoo is no dependency of
  this project: install it apart, `npm install promptfoo@0.121`, and pass its executable; without it the arm is
  skipped, saying so). Its cache, telemetry and update check are off and its results go to a temporary folder, so
  no run of it helps the next.

Each round runs every arm once, in turn, so that a change of the machine's load falls on all of them alike; the
figures are medians over the rounds. For each arm: its wall time and its three phases (from its start to the server's
first request, the calls, from the server's last reply to its exit, from the server's own clock), its CPU per call
(its processes' user + system), its peak memory (from the kernel, wait4's rusage: its largest process's RSS; and from
/proc, sampled every 20 ms: the sum over it and its child processes, as PSS). The table at the end is each size's
medians, the run's ratio to the bare litellm script and the gateway run's to promptfoo, and the goals.

The server (chat_server.py) is asyncio (aiohttp) in a forked child: a thread per connection would share its
interpreter lock among 64 threads, and its clock would then be the server's, not the client's.
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
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # for the server's kindgi_eval_tests.fake_provider
sys.path.insert(0, str(REPO / "benchmarks"))  # its neighbour chat_server.py

import chat_server  # noqa: E402

CLI = Path(sys.executable).parent / "kindgi-eval"
MODEL = "bench-agent"
REPLY = json.dumps(
    {
        "messages": ["The Foundation Course is $450. Would you pay upfront or in instalments?"],
        "escalate": False,
        "reason": None,
    }
)
CASE = {"text": "how much is the foundation course?", "expect": {"escalate": False}, "must_contain": ["$450"]}
KEY = "sk-bench-not-a-key"
ARMS = ("run", "gateway", "litellm", "aiohttp", "promptfoo")
LABELS = {
    "run": "kindgi-eval run",
    "gateway": "run, gateway",
    "litellm": "bare litellm",
    "aiohttp": "bare aiohttp",
    "promptfoo": "promptfoo eval",
}
EXITS = {"promptfoo": (0, 100)}
"""The exit statuses of an arm whose cases all passed: promptfoo exits 100 when an assertion failed, which none should;
kindgi-eval 0, and the bare scripts 0."""
PROVIDER = "openai/"
"""The provider prefix of the model name a gateway is asked for (litellm's own name), which a bare script's model
name does not carry."""

Command = Callable[[str], list[str]]
"""An arm's command line, given the base URL (`.../v1`) of the server it is to call."""


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
    said: str


def timed(command: Command, env: dict[str, str], delay: float, cwd: Path = REPO) -> Timed:
    """One process run to exit against a fresh server: its wall time, the server's view of it, its peak RSS, the end
    of its error output.

    Its peak RSS counts this process's at the fork too (Linux keeps the larger across exec), so this process
    imports nothing of the project's."""
    server, base_url = chat_server.start(delay, REPLY, MODEL)
    try:
        started = time.time()
        tree_peak = 0
        with open(os.devnull, "w") as sink, tempfile.TemporaryFile("w+") as errors:
            process = subprocess.Popen(
                command(base_url), cwd=cwd, env={**env, "OPENAI_BASE_URL": base_url}, stdout=sink, stderr=errors
            )
            while True:
                pid, status, usage = os.wait4(process.pid, os.WNOHANG)
                if pid:
                    break
                tree_peak = max(tree_peak, tree_pss_kb(process.pid))
                time.sleep(0.02)
            ended = time.time()
            errors.seek(0)
            said = errors.read()[-600:]
        seen = chat_server.stats(base_url)
    finally:
        server.kill()
        server.join()
    first, last = seen["first_request"] or ended, seen["last_reply"] or ended
    return Timed(
        ended - started,
        first - started,
        ended - last,
        usage.ru_maxrss / 1024,
        tree_peak / 1024,
        usage.ru_utime + usage.ru_stime,
        os.waitstatus_to_exitcode(status),
        seen["requests"],
        seen["peak"],
        seen["bodies"],
        said,
    )


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
    """Each figure's median over the runs (the exit status, counts and output of the last)."""
    return Timed(*(statistics.median(getattr(r, f) for r in runs) for f in Timed._fields[:6]), *runs[-1][6:])


def generate(folder: Path, size: int) -> Path:
    """A suite of `size` one-turn cases, each reaching the model."""
    folder.mkdir(parents=True)
    (folder / "cases.jsonl").write_text(
        "".join(json.dumps({"id": f"case-{n:04d}", **CASE}) + "\n" for n in range(size))
    )
    return folder


def promptfoo_config(folder: Path, size: int, base_url: str) -> Path:
    """promptfoo's config for the suite `generate` writes: the same prompt, model and server, one `contains` each."""
    config = {
        "description": "the same calls as kindgi-eval run",
        "providers": [{"id": f"openai:chat:{MODEL}", "config": {"apiBaseUrl": base_url, "apiKey": KEY}}],
        "prompts": ["{{text}}"],
        "tests": [
            {"vars": {"text": CASE["text"]}, "assert": [{"type": "contains", "value": "$450"}]} for _ in range(size)
        ],
    }
    path = folder / "promptfooconfig.json"
    path.write_text(json.dumps(config))
    return path


def bare_bodies(bodies: list[dict]) -> list[dict]:
    """The requests a run sent, as a bare script sends them: a gateway was asked for litellm's model name
    (`openai/bench-agent`), the provider itself for the model alone."""
    return [{**b, "model": b["model"].removeprefix(PROVIDER)} for b in bodies]


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
    """The floor of the embedded path: the same requests sent through `litellm.acompletion` under a semaphore, in a
    process that imports litellm and nothing of the project's."""
    os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"  # else the import fetches the cost map from the network
    import litellm

    bodies = json.loads(Path(bodies_file).read_text())
    base_url = os.environ["OPENAI_BASE_URL"]

    async def run() -> None:
        slots = asyncio.Semaphore(concurrency)

        async def one(body: dict) -> str:
            async with slots:
                response = await litellm.acompletion(
                    model=f"openai/{body['model']}",
                    messages=body["messages"],
                    api_base=base_url,
                    api_key=KEY,
                    response_format=body.get("response_format"),
                )
                return response.choices[0].message.content

        await asyncio.gather(*(one(b) for b in bodies))

    asyncio.run(run())


class Sized(NamedTuple):
    """One suite size and concurrency, and each arm's median there."""

    size: int
    concurrency: int
    arms: dict[str, Timed]


def measure(
    size: int,
    concurrency: int,
    suite: Path,
    folder: Path,
    arms: list[str],
    args: argparse.Namespace,
    env: dict[str, str],
) -> Sized:
    """Every arm `args.repeat` times, the arms in turn within each round; the bare scripts send the requests the
    first kindgi-eval arm sent."""
    run = [
        str(CLI),
        "run",
        "--agent-model",
        f"openai:{MODEL}",
        "--eval-dir",
        str(suite),
        "--concurrency",
        str(concurrency),
    ]
    bodies = folder / "bodies.json"
    commands: dict[str, Command] = {
        "run": lambda base_url: run,
        "gateway": lambda base_url: [*run, "--gateway-url", base_url.removesuffix("/v1")],
        "litellm": lambda base_url: [sys.executable, __file__, "--bare-litellm", str(bodies), str(concurrency)],
        "aiohttp": lambda base_url: [sys.executable, __file__, "--bare-loop", str(bodies), str(concurrency)],
        "promptfoo": lambda base_url: [
            args.promptfoo,
            "eval",
            "-c",
            str(promptfoo_config(folder, size, base_url)),
            "--max-concurrency",
            str(concurrency),
            "--no-cache",
            "--no-table",
            "--no-progress-bar",
        ],
    }
    runs: dict[str, list[Timed]] = {arm: [] for arm in arms}
    for _ in range(args.repeat):
        for arm in arms:
            if arm in ("litellm", "aiohttp") and not bodies.exists():
                raise SystemExit(
                    f"whole_run.py: the {arm} arm sends the requests a kindgi-eval arm sent, and none ran before it. "
                    "Add --arms run (or gateway)."
                )
            for attempt in (
                1,
                2,
            ):  # promptfoo 0.121 on Node.js 20 now and then crashes writing its output after the calls
                t = timed(commands[arm], env, args.delay, cwd=folder if arm == "promptfoo" else REPO)
                if t.code in EXITS.get(arm, (0,)) and t.served == size:
                    break
                failed = f"{LABELS[arm]} exited {t.code} after {t.served} of {size} calls: {t.said}"
                if attempt == 2:
                    raise SystemExit(f"whole_run.py: {failed}")
                print(f"  (run again, once: {failed.splitlines()[0]})")
            if arm in ("run", "gateway") and not bodies.exists():
                bodies.write_text(json.dumps(bare_bodies(t.bodies)))
            runs[arm].append(t)
    bodies.unlink(missing_ok=True)
    return Sized(size, concurrency, {arm: median(r) for arm, r in runs.items()})


def print_sized(sized: Sized) -> None:
    """Each arm's phases, CPU and memory at one size."""
    print(
        f"N={sized.size:<4} C={sized.concurrency:<3} server peak in flight "
        f"{', '.join(f'{LABELS[a]} {t.peak_in_flight}' for a, t in sized.arms.items())}"
    )
    for arm, t in sized.arms.items():
        calls = t.wall - t.to_first - t.after_last
        print(
            f"  {LABELS[arm]:<16} wall {t.wall:6.2f} s = to first request {t.to_first:5.2f} s + calls {calls:5.2f} s + after "
            f"last reply {t.after_last:5.2f} s  CPU {t.cpu:5.2f} s ({t.cpu / sized.size * 1000:.1f} ms per call)  peak RSS "
            f"{t.peak_mb:4.0f} MB (PSS of all its processes {t.tree_peak_mb:4.0f} MB)"
        )


def size_name(sized: Sized) -> str:
    return f"N = {sized.size}" if sized.size == 1 else f"N = {sized.size}, C = {sized.concurrency}"


def ratio(arms: dict[str, Timed], arm: str, against: str) -> float | None:
    return arms[arm].wall / arms[against].wall if arm in arms and against in arms else None


def table(measured: list[Sized], judge: dict | None) -> list[str]:
    """The medians of every size as one markdown table, each kindgi-eval arm beside what it is held against."""
    shown = [
        arm for arm in ("litellm", "promptfoo", "aiohttp", "run", "gateway") if any(arm in s.arms for s in measured)
    ]
    lines = [f"| size | {' | '.join(LABELS[a] for a in shown)} |", f"|---|{'---|' * len(shown)}"]
    for sized in measured:
        cells = []
        for arm in shown:
            t = sized.arms.get(arm)
            cell = "-" if t is None else f"{t.wall:.2f} s"
            against = [
                (other, r)
                for other in ("litellm", "promptfoo")
                if arm in ("run", "gateway") and (r := ratio(sized.arms, arm, other)) is not None
            ]
            if t is not None and against:
                cell += f" ({', '.join(f'{r:.2f}x {other}' for other, r in against)})"
            cells.append(cell)
        lines.append(f"| {size_name(sized)} | {' | '.join(cells)} |")
    if judge is not None:
        lines.append(
            f"| judge stage, {judge['cases']} cases, {judge['calls']} calls, C = {judge['concurrency']} | "
            + " | ".join(
                f"{judge['wall']:.2f} s of calls against an ideal of {judge['ideal']:.2f} s "
                f"({judge['wall'] / judge['ideal']:.2f}x)"
                if arm == "run"
                else "-"
                for arm in shown
            )
            + " |"
        )
    return lines


def goals(measured: list[Sized], judge: dict | None) -> list[str]:
    """The goals, each met or not, where this sitting measured what it needs: a ratio at most its limit, or, where
    `ahead`, below it."""
    said = []

    def goal(text: str, value: float | None, limit: float, ahead: bool = False) -> None:
        if value is not None:
            met = value < limit if ahead else value <= limit
            said.append(f"{text}: {value:.2f} (goal {'<' if ahead else '<='} {limit:g}): {'met' if met else 'not met'}")

    for sized in measured:
        name = size_name(sized)
        goal(f"{name}: run / bare litellm", ratio(sized.arms, "run", "litellm"), 1.15 if sized.size == 1 else 1.10)
        if sized.size >= 2000:
            goal(f"{name}: run / promptfoo", ratio(sized.arms, "run", "promptfoo"), 1, ahead=True)
        goal(f"{name}: run with a gateway / promptfoo", ratio(sized.arms, "gateway", "promptfoo"), 1, ahead=True)
        if sized.size >= 2000 and "run" in sized.arms:
            goal(f"{name}: the run's peak RSS, MB", sized.arms["run"].peak_mb, 250)
    if judge is not None:
        goal("judge stage: calls / ideal", judge["wall"] / judge["ideal"], 1.15)
    return said


def judge_stage(cases: int, concurrency: int, delay: float, repeat: int) -> dict:
    """The judge stage's figures, measured by judge_calls.py in a process of its own (it imports the project)."""
    done = subprocess.run(
        [
            sys.executable,
            str(REPO / "benchmarks" / "judge_calls.py"),
            "--cases",
            str(cases),
            "--concurrency",
            str(concurrency),
            "--delay",
            str(delay),
            "--repeat",
            str(repeat),
            "--json",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    if done.returncode != 0:
        raise SystemExit(f"whole_run.py: judge_calls.py exited {done.returncode}: {done.stderr[-600:]}")
    return json.loads(done.stdout.splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[1, 400])
    parser.add_argument("--concurrency", type=int, nargs="*", default=[16, 64], help="for suites of more than one case")
    parser.add_argument("--delay", type=float, default=0.2)
    parser.add_argument("--repeat", type=int, default=3, help="rounds of every arm; the median is shown")
    parser.add_argument(
        "--arms", nargs="*", choices=ARMS, default=list(ARMS), help="the arms to run (promptfoo needs --promptfoo)"
    )
    parser.add_argument(
        "--promptfoo",
        metavar="PATH",
        type=lambda path: str(Path(path).absolute()),  # it runs in a folder of its own
        help="the promptfoo executable; without it the promptfoo arm is skipped",
    )
    parser.add_argument(
        "--judge-cases",
        type=int,
        default=100,
        help="cases of the judge stage (judge_calls.py, at concurrency 32); 0 skips it",
    )
    parser.add_argument("--no-golden", action="store_true", help="skip the offline golden run")
    parser.add_argument(
        "--quick",
        action="store_true",
        help="one suite of 2 cases, concurrency 2, no delay, one round, no warm-up run, no judge stage",
    )
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
        args.sizes, args.concurrency, args.delay, args.repeat, args.judge_cases = [2], [2], 0.0, 1, 0
    arms = [arm for arm in ARMS if arm in args.arms]  # in this order: the bare scripts send what a run sent before them
    if "promptfoo" in arms and not args.promptfoo:
        print("promptfoo arm: skipped, no --promptfoo PATH given (install it apart: npm install promptfoo@0.121)")
        arms.remove("promptfoo")

    load = os.getloadavg()
    print(
        f"server answering after {args.delay * 1000:.0f} ms; median of {args.repeat}; load average {load[0]:.2f} {load[1]:.2f}; "
        f"{os.cpu_count()} cores"
    )
    measured: list[Sized] = []
    with tempfile.TemporaryDirectory() as tmp:
        env = {
            **os.environ,
            "KINDGI_HOME": f"{tmp}/home",
            "DAGSTER_HOME": f"{tmp}/home/dagster",
            "OPENAI_API_KEY": KEY,
            "PROMPTFOO_CONFIG_DIR": f"{tmp}/promptfoo",
            "PROMPTFOO_DISABLE_TELEMETRY": "1",
            "PROMPTFOO_DISABLE_UPDATE": "1",
            "PROMPTFOO_CACHE_ENABLED": "false",
        }
        for var in (
            "EVAL_DIR",
            "AGENT_URL",
            "AGENT_MODEL",
            "EVAL_JUDGE_MODEL",
            "EVAL_CONCURRENCY",
            "KINDGI_GATEWAY_URL",
        ):
            env.pop(var, None)
        golden_run: Command = lambda base_url: [str(CLI), "run", "--mock"]  # noqa: E731
        if not args.quick:
            first = timed(golden_run, env, args.delay)  # creates the instance's database; not counted
            assert first.code in (0, 1), f"run --mock exited {first.code}: {first.said}"
        if not args.no_golden:
            golden = median([timed(golden_run, env, args.delay) for _ in range(args.repeat)])
            print(
                f"golden set (run --mock): wall {golden.wall:.2f} s, CPU {golden.cpu:.2f} s, peak {golden.peak_mb:.0f} MB, exit {golden.code}"
            )
        for size in args.sizes:
            suite = generate(Path(tmp) / f"suite{size}", size)
            for concurrency in args.concurrency if size > 1 else [1]:
                sized = measure(size, concurrency, suite, Path(tmp), arms, args, env)
                print_sized(sized)
                measured.append(sized)
    judge = judge_stage(args.judge_cases, 32, args.delay, args.repeat) if args.judge_cases else None
    load = os.getloadavg()
    print(
        f"\nmedians of {args.repeat}, server answering after {args.delay * 1000:.0f} ms; load average now {load[0]:.2f} {load[1]:.2f}"
    )
    print("\n".join(table(measured, judge)))
    print("\n".join(goals(measured, judge)))


if __name__ == "__main__":
    main()

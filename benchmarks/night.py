"""How long `kindgi-eval night` takes over a store of many suites and nights: the runs, statuses and calibration of
every night generated straight into the store's layout, then the night read (in this process, and as the command a
user runs, with a tenants file declaring every suite), against the goal of 2 s.

    .venv/bin/python benchmarks/night.py [--suites 50] [--nights 14] [--cases 200] [--flips 0.01] [--dropped 3] [--repeat 5]

Each suite keeps its cases' statuses from night to night but for `--flips` of them, drawn afresh each night (an
agent and a judge that vary a little); on the last night, `--dropped` suites lose a quarter of their passing cases.

The commands run with their byte code cached, as an installed package has it (pip compiles it at install, as
`uv pip install --compile-bytecode` does): in a cache folder of their own (PYTHONPYCACHEPREFIX), filled by one run
before the timed ones, even where PYTHONDONTWRITEBYTECODE is set. Beside each whole process's wall time, the CPU time
it took: on a machine shared with other work, the wall time is the CPU time and the wait for a core.

The store is made in a temporary folder and deleted afterwards.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import date, timedelta
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from kindgi_eval.reports import night_of  # noqa: E402
from kindgi_eval.store import SHARED, night_runs  # noqa: E402
from kindgi_eval.store.arrow import to_table  # noqa: E402
from kindgi_eval.store.layout import table_path, write_atomically  # noqa: E402

CLI = Path(sys.executable).parent / "kindgi-eval"
GOAL_S = 2.0
STATUSES = ["passed"] * 85 + ["reviewed"] * 8 + ["failed"] * 4 + ["judged-fail"] * 3
GROUPS = ["implicit_concession", "semantic_repetition", "answers_the_question", "free_text"]


def summary(tenant: str, started: str, cases: int) -> dict:
    return {
        "tenant": tenant,
        "eval_dir": "evals/golden",
        "suite_hash": "0" * 64,
        "config_hash": "1" * 64,
        "agent": "openai:gpt-4o-mini",
        "judge": "openai:gpt-4o",
        "judge_prompt_hash": "2" * 64,
        "code_version": "bench",
        "replies_from": "",
        "started_at": started,
        "finished_at": started,
        "cases": cases,
        "passed": cases,
        "failed": 0,
        "judged_fail": 0,
        "judged_pass": 0,
        "reviewed": 0,
        "ungraded": 0,
        "agent_usd": 0.0,
        "judge_usd": 0.0,
        "cost_unknown": False,
        "stages": [],
        "uncovered": [],
    }


def generate(root: Path, suites: int, nights: int, cases: int, flips: float, dropped: int) -> list[tuple[str, str]]:
    """Every night of every suite: its summary, statuses and calibration; the suites as (tenant, partition)."""
    rng = random.Random(7)
    first = date.today() - timedelta(days=nights - 1)
    declared = []
    for s in range(suites):
        tenant = f"tenant-{s:02d}"
        key = f"{tenant}.golden"
        declared.append((tenant, key))
        base = [rng.choice(STATUSES) for _ in range(cases)]
        for n in range(nights):
            statuses = [rng.choice(STATUSES) if rng.random() < flips else status for status in base]
            if n == nights - 1 and s < dropped:
                statuses = ["failed" if status == "passed" and rng.random() < 0.25 else status for status in statuses]
            day = (first + timedelta(days=n)).isoformat()
            run_id = f"{s:04d}{n:04d}-0000-4000-8000-000000000000"
            tables = {
                SHARED.run_summary: [summary(tenant, f"{day}T02:00:{s % 60:02d}+00:00", cases)],
                SHARED.statuses: [
                    {
                        "case_id": f"case-{c:04d}",
                        "status": statuses[c],
                        "failures": [],
                        "messages": ["hi"],
                        "escalate": False,
                        "reason": None,
                        "latency_ms": 800.0,
                        "error": None,
                        "review": [],
                        "criteria": [],
                    }
                    for c in range(cases)
                ],
                SHARED.calibration: [
                    {
                        "group": g,
                        "agreement": 1.0,
                        "kappa": 1.0,
                        "items": 4,
                        "pass_labels": 2,
                        "fail_labels": 2,
                        "calibrated": True,
                        "note": "agreed",
                        "agreement_low": 0.5,
                        "samples": 12,
                        "invalid_samples": 0,
                        "invalid_causes": [],
                        "judge": "openai:gpt-4o",
                    }
                    for g in GROUPS
                ],
            }
            for table, rows in tables.items():
                write_atomically(
                    to_table([table.row(**r) for r in rows], table.row), table_path(root, table.asset, key, day, run_id)
                )
    return declared


def whole_process(words: list[str], env: dict[str, str], repeat: int) -> tuple[float, float]:
    """The median wall time and the median CPU time (user and system) of `kindgi-eval WORDS` over `repeat` runs."""
    wall, cpu = [], []
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        done = subprocess.run([str(CLI), *words], env=env, capture_output=True, text=True)
        wall.append(time.perf_counter() - t0)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
        if done.returncode not in (0, 1):
            sys.exit(f"kindgi-eval {' '.join(words)} failed: {done.stderr}")
    return statistics.median(wall), statistics.median(cpu)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--suites", type=int, default=50)
    parser.add_argument("--nights", type=int, default=14)
    parser.add_argument("--cases", type=int, default=200)
    parser.add_argument(
        "--flips", type=float, default=0.01, help="the share of a suite's cases drawn afresh each night"
    )
    parser.add_argument("--dropped", type=int, default=3, help="suites whose pass rate falls on the last night")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="kindgi-night-"))
    try:
        root = folder / "store"
        started = time.perf_counter()
        declared = generate(root, args.suites, args.nights, args.cases, args.flips, args.dropped)
        print(
            f"store: {args.suites} suites x {args.nights} nights x {args.cases} cases, {args.flips:.0%} of cases drawn afresh "
            f"each night, {args.dropped} suites dropping on the last; made in {time.perf_counter() - started:.1f} s"
        )
        keys = [k for _, k in declared]
        read = []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            suites = night_runs(root, keys)
            found = night_of([(t, s) for (t, _), s in zip(declared, suites, strict=True)], None, missing=True)
            read.append(time.perf_counter() - t0)
        told = sum(t.worse for t in found.tenants)
        print(
            f"night read in this process: median {statistics.median(read):.2f} s of {args.repeat} "
            f"({told} of {len(found.tenants)} tenants got worse); peak memory {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB"
        )
        tenants = folder / "tenants.toml"
        homes = []
        for tenant, _ in declared:
            home = folder / "tenants" / tenant
            (home / "evals" / "golden").mkdir(parents=True)
            (home / "config").mkdir()
            homes.append(
                f'[[tenant]]\nname = "{tenant}"\nhome = "{home}"\nconfig = "config"\nsuites = ["evals/golden"]\nagent_model = "mock:agent"\n'
            )
        tenants.write_text("\n".join(homes))
        env = {
            **{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"},
            "PYTHONPYCACHEPREFIX": str(folder / "pycache"),
            "KINDGI_STORE": str(root),
            "KINDGI_HOME": str(folder / "home"),
            "KINDGI_TENANTS": str(tenants),
        }
        for words in (["night"], ["--help"]):
            subprocess.run([str(CLI), *words], env=env, capture_output=True)  # compiles the byte code it imports
            wall, cpu = whole_process(words, env, args.repeat)
            print(
                f"kindgi-eval {' '.join(words)}, the whole process: median {wall:.2f} s of {args.repeat} "
                f"(CPU {cpu:.2f} s)"
                + (
                    f"; goal {GOAL_S:.1f} s: {'met' if wall <= GOAL_S else 'NOT met'} ({wall / GOAL_S:.2f} of it)"
                    if words == ["night"]
                    else ""
                )
            )
        print(f"load average over the last minute: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    finally:
        shutil.rmtree(folder)


if __name__ == "__main__":
    main()

"""A real judge on the golden set: SmolLM2-135M-Instruct served by deploy/real-judge/server.js on 127.0.0.1,
reached by litellm as `openai:smollm2-135m-instruct` exactly as vLLM or Ollama would be, judging the golden
set's replies from the offline demo agent. Prints, per calibration group, agreement, kappa, the item counts
and whether it calibrated; then the judge's invalid-sample rate (and why) and its latency per call.

    .venv/bin/python benchmarks/real_judge.py [--eval-dir evals/golden] [--max-tokens 256] [--threads 1]

It runs `kindgi-eval run --mock --judge-model openai:smollm2-135m-instruct --json ...` as a subprocess with a
fresh KINDGI_HOME, then reads `judge_samples` through `kindgi-eval sql --format json`. Needs Node.js 20 and
the install of deploy/real-judge (see its README). The golden set takes about 5 to 10 minutes on one core.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RUN_VARIABLES = (
    "OPENAI_API_BASE",
    "KINDGI_STORE",
    "DAGSTER_HOME",
    "EVAL_DIR",
    "CONFIG_DIR",
    "AGENT_MODEL",
    "AGENT_URL",
    "EVAL_JUDGE_MODEL",
    "EVAL_MAX_LATENCY_MS",
    "EVAL_CONCURRENCY",
    "EVAL_MODEL_TIMEOUT_S",
)
"""Run settings the shell may hold; the run takes its settings from the flags below alone."""


def _judge_server():
    spec = importlib.util.spec_from_file_location("judge_server", REPO / "deploy" / "real-judge" / "judge_server.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def cli() -> str:
    """The kindgi-eval beside this interpreter (the project's venv), else the one on PATH."""
    beside = Path(sys.executable).parent / "kindgi-eval"
    return str(beside) if beside.exists() else "kindgi-eval"


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def why(reason: str) -> str:
    """An invalid sample's reason up to its first colon: 'unparseable', 'unquoted failure', ..."""
    return reason.split(":", 1)[0].split(" (", 1)[0]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--eval-dir", default=str(REPO / "evals" / "golden"))
    parser.add_argument("--max-tokens", type=int, default=256, help="the server's answer length when none is sent")
    parser.add_argument("--threads", type=int, default=1, help="the server's CPU threads")
    parser.add_argument("--parallel", type=int, default=1, help="requests the server evaluates at once")
    parser.add_argument("--model-timeout-s", type=float, default=300)
    parser.add_argument("--keep", metavar="DIR", help="keep the run's KINDGI_HOME here (and the server's log)")
    args = parser.parse_args()

    judge_server = _judge_server()
    if problems := judge_server.missing():
        print("error: the real judge cannot run here: " + "; ".join(problems), file=sys.stderr)
        print(f"install it with: {judge_server.INSTALL}", file=sys.stderr)
        return 2
    if args.keep:
        Path(args.keep).mkdir(parents=True, exist_ok=True)
        return bench(args, judge_server, Path(args.keep))
    with tempfile.TemporaryDirectory(prefix="real-judge-bench-") as home:
        return bench(args, judge_server, Path(home))


def bench(args: argparse.Namespace, judge_server, home: Path) -> int:
    """Run the suite with the real judge, its state under `home`, and print the figures."""
    env = {k: v for k, v in os.environ.items() if k not in RUN_VARIABLES}
    env["KINDGI_HOME"] = str(home)
    summary_path = home / "summary.json"
    server = {"max_tokens": args.max_tokens, "threads": args.threads, "parallel": args.parallel}
    with judge_server.RealJudge(keep_log=args.keep is not None, **server) as judge:
        env.update(judge.env())
        command = [
            cli(),
            "run",
            "--mock",
            "--eval-dir",
            args.eval_dir,
            "--judge-model",
            judge.model,
            "--json",
            str(summary_path),
            # as many calls in flight as the server evaluates at once, so latency is service time, not queueing
            "--concurrency",
            str(args.parallel),
            "--model-timeout-s",
            f"{args.model_timeout_s:g}",
        ]
        print(f"{time.strftime('%Y-%m-%d')} {judge.ready_line}")
        print("$ kindgi-eval " + " ".join(command[1:]), flush=True)
        started = time.monotonic()
        done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, check=False)
        wall = time.monotonic() - started
    if args.keep:
        print(f"kept: the run's home {home}, the server's log {judge.log}")
    if done.returncode not in (0, 1) or not summary_path.exists():
        print(f"error: the run did not complete (exit {done.returncode}):\n{done.stderr[-3000:]}", file=sys.stderr)
        return 1
    summary = json.loads(summary_path.read_text())
    query = f"SELECT * FROM judge_samples WHERE run_id = '{summary['run_id']}'"
    rows = subprocess.run(
        [cli(), "sql", query, "--format", "json"], cwd=REPO, env=env, capture_output=True, text=True, check=False
    )
    if rows.returncode != 0:
        print(f"error: {rows.stderr}", file=sys.stderr)
        return 1
    samples = json.loads(rows.stdout)

    print(f"\nrun {summary['run_id']} (exit {done.returncode}), {len(samples)} judge calls, {wall:.0f} s wall")
    print(f"counts: {summary['counts']}, {summary['ungraded']} criteria ungraded\n")
    by_group: dict[str, list[dict]] = defaultdict(list)
    for s in samples:
        by_group[s["group"]].append(s)
    print(
        f"{'group':22} {'items':>5} {'pass':>4} {'fail':>4} {'agreement':>9} {'kappa':>6} {'invalid':>12}  calibrated"
    )
    for group, c in summary["calibration"].items():
        mine = by_group.get(group, [])
        invalid = sum(s["vote"] == "invalid" for s in mine)
        rate = f"{invalid}/{len(mine)}" if mine else "-"
        agreement = "n/a" if c["agreement"] is None else f"{c['agreement']:.2f}"
        kappa = "n/a" if c["kappa"] is None else f"{c['kappa']:.2f}"
        print(
            f"{group:22} {c['items']:>5} {c['labels']['pass']:>4} {c['labels']['fail']:>4} {agreement:>9} {kappa:>6} "
            f"{rate:>12}  {'yes' if c['calibrated'] else 'no'}: {c['note']}"
        )
    invalid = [s for s in samples if s["vote"] == "invalid"]
    votes = Counter(s["vote"] for s in samples)
    rate = len(invalid) / len(samples) if samples else 0.0
    print(f"\ninvalid samples: {len(invalid)} of {len(samples)} ({rate:.0%}); votes {dict(votes)}")
    for reason, n in Counter(why(s["invalid_reason"] or "") for s in invalid).most_common():
        print(f"  {n:4} {reason}")
    latencies = [s["latency_ms"] for s in samples]
    if latencies:
        mean, p50, p95 = statistics.mean(latencies), percentile(latencies, 0.5), percentile(latencies, 0.95)
        print(
            f"latency per call: mean {mean / 1000:.2f} s, p50 {p50 / 1000:.2f} s, p95 {p95 / 1000:.2f} s, "
            f"max {max(latencies) / 1000:.2f} s"
        )
        prompt = statistics.mean(s["prompt_tokens"] for s in samples)
        completion = statistics.mean(s["completion_tokens"] for s in samples)
        print(f"tokens per call: {prompt:.0f} prompt, {completion:.0f} completion (mean)")
    calibrated = [g for g, c in summary["calibration"].items() if c["calibrated"]]
    print(f"\ncalibrated groups: {', '.join(calibrated) or 'none'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

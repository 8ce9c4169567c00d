"""Fault injection: a judged run of many cases against a provider that misbehaves at random (with a fixed seed),
SIGKILLed twice at random moments and resumed each time, against the same run left alone.

    .venv/bin/python benchmarks/faults.py [--cases 500] [--seed 7] [--concurrency 16] [--delay 0.02]

The provider (kindgi_eval_tests/fake_provider.py, serving from a forked child) is OpenAI-compatible and serves both the
agent and the judge. Each request is named by what it asks (the agent: the contact's message; the judge: criterion,
message and reply), and the seed draws a fault per name: 429 on its first attempt (10%), 500 on its first attempt
(10%), a hang past the model timeout on every attempt (5%), or a garbage answer on every attempt (5%). So both runs
meet the same faults however often a name is asked, and should end with the same statuses: 429 and 500 are retried
away, a hang or garbage fails the case (or leaves a judge sample invalid) in both.

Prints the calls each run made, the rows lost and duplicated by the kills (both must be 0), and whether the final
statuses equal the unbroken run's; exits 1 when they do not or a row was lost or duplicated.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from kindgi_eval.kinds import table_named  # noqa: E402
from kindgi_eval.store.batches import find_run_areas  # noqa: E402
from kindgi_eval.store.layout import read_rows  # noqa: E402
from kindgi_eval_tests.fake_provider import Answer, FakeProvider, criterion_of, fenced  # noqa: E402

CLI = Path(sys.executable).parent / "kindgi-eval"
TIMEOUT_S = 3.0
"""The model timeout of both runs: long enough that only a scripted hang outlasts it on a busy machine."""
GROUPS = ("implicit_concession", "semantic_repetition", "answers_the_question")
KEYS = {
    "agent_replies": ("case_id",),
    "judge_samples": ("subject", "subject_id", "source", "criterion", "sample"),
    "statuses": ("case_id",),
}


def scripted(seed: int, delay: float):
    """The provider's script: answers by request name, with the seed's faults; counts attempts per name."""
    attempts: Counter[str] = Counter()
    lock = threading.Lock()

    def name_of(request: dict[str, Any]) -> str:
        if request["model"] == "fault-agent":
            return "agent\0" + fenced(request, "contact message")
        return "judge\0" + "\0".join(
            (criterion_of(request), fenced(request, "contact message"), fenced(request, "reply"))
        )

    def script(request: dict[str, Any]) -> Answer:
        name = name_of(request)
        with lock:
            attempt = attempts[name]
            attempts[name] += 1
        draw = int.from_bytes(hashlib.sha256(f"{seed}\0{name}".encode()).digest()[:8], "big") / 2**64
        if draw < 0.05:
            return Answer("", delay_s=TIMEOUT_S + 0.5)  # hangs past the timeout, every time
        if draw < 0.10:
            return Answer("<html>upstream garbage</html>", delay_s=delay)  # garbage, every time
        if draw < 0.20 and attempt == 0:
            return Answer(json.dumps({"error": {"message": "slow down"}}), status=429, headers={"retry-after-ms": "20"})
        if draw < 0.30 and attempt == 0:
            return Answer(json.dumps({"error": {"message": "oops"}}), status=500)
        if request["model"] == "fault-agent":
            text = fenced(request, "contact message")
            return Answer(
                json.dumps({"messages": [f"You asked: {text} Which course?"], "escalate": False, "reason": None}),
                delay_s=delay,
            )
        reply = fenced(request, "reply")
        vote = (
            {"verdict": "fail", "evidence": "BAD", "reason": "says BAD"}
            if "BAD" in reply
            else {"verdict": "pass", "evidence": "", "reason": "ok"}
        )
        return Answer(json.dumps(vote), delay_s=delay)

    return script


def write_suite(folder: Path, cases: int) -> None:
    folder.mkdir(parents=True)
    lines = []
    for n in range(cases):
        text = f"question {n}: {'is this BAD value' if n % 10 == 3 else 'what do you teach'}?"
        lines.append(json.dumps({"id": f"case-{n:04d}", "text": text, "expect": {"escalate": False}}))
    (folder / "cases.jsonl").write_text("\n".join(lines) + "\n")
    items = []
    for group in GROUPS:
        history = [{"role": "agent", "text": "Earlier."}] if group == "semantic_repetition" else []
        for label, reply in (("pass", f"A fine reply on {group}."), ("fail", f"A BAD reply on {group}.")):
            items.append(
                {
                    "id": f"{group}-{label}",
                    "history": history,
                    "text": "hi",
                    "reply": [reply],
                    "criterion": group,
                    "label": label,
                }
            )
    (folder / "calibration.jsonl").write_text("".join(json.dumps(i) + "\n" for i in items))


class Series:
    """One store and one provider (its fault memory fresh), for one run and its resumes."""

    def __init__(self, base: Path, suite: Path, args: argparse.Namespace):
        self.home = base
        self.server = FakeProvider(scripted(args.seed, args.delay))
        self.child = self.server.serve_in_child()
        self.env = {
            **os.environ,
            "KINDGI_HOME": str(base),
            "DAGSTER_HOME": str(base / "dagster"),
            "KINDGI_STORE": "",
            "OPENAI_API_KEY": "sk-bench-not-a-key",
            "OPENAI_BASE_URL": self.server.base_url,
            **{
                var: ""
                for var in (
                    "EVAL_DIR",
                    "CONFIG_DIR",
                    "AGENT_MODEL",
                    "AGENT_URL",
                    "EVAL_JUDGE_MODEL",
                    "EVAL_MAX_LATENCY_MS",
                    "EVAL_CONCURRENCY",
                    "EVAL_MODEL_TIMEOUT_S",
                )
            },
        }
        self.args = [
            "run",
            "--eval-dir",
            str(suite),
            "--agent-model",
            "openai:fault-agent",
            "--judge-model",
            "openai:fault-judge",
            "--concurrency",
            str(args.concurrency),
            "--model-timeout-s",
            str(TIMEOUT_S),
            "--max-latency-ms",
            "60000",
        ]

    def requests(self) -> int:
        return self.server.stats()["requests"]

    def start(self, *args: str) -> subprocess.Popen:
        return subprocess.Popen(
            [str(CLI), *args], cwd=REPO, env=self.env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
        )

    def finish(self, process: subprocess.Popen) -> str:
        """The run id a run that ended on its own reports (exit 0 or 1: some cases fail by design)."""
        _, err = process.communicate()
        assert process.returncode in (0, 1), err[-2000:]
        return next(line for line in err.splitlines() if line.startswith("run ")).split()[1]

    def kill_after(self, process: subprocess.Popen, more: int) -> bool:
        """SIGKILL the run once the provider has seen `more` further requests; False when it ended first."""
        goal = self.requests() + more
        while self.requests() < goal:
            if process.poll() is not None:
                return False
            time.sleep(0.01)
        os.kill(process.pid, signal.SIGKILL)
        process.wait()
        return True

    def killed_run(self, known: set[str]) -> str:
        (area,) = [a for a in find_run_areas(self.home / "store", "") if a.name not in known]
        return area.name.removeprefix("run_id=")

    def close(self) -> None:
        os.kill(self.child.pid, signal.SIGKILL)
        self.child.join()


def table(series: Series, asset: str, key: str, run_id: str) -> list[dict]:
    return [r.model_dump() for r in read_rows(series.home / "store", table_named(asset), key, run_id)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=500)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--delay", type=float, default=0.02, help="seconds the provider takes to answer")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    base = Path(tempfile.mkdtemp(prefix="kindgi-faults-"))
    try:
        suite = base / "faults"
        write_suite(suite, args.cases)
        key = "demo-academy.faults"

        clean = Series(base / "clean", suite, args)
        started = time.perf_counter()
        clean_run = clean.finish(clean.start(*clean.args))
        clean_calls, clean_wall = clean.requests(), time.perf_counter() - started
        clean.close()

        broken = Series(base / "broken", suite, args)
        started = time.perf_counter()
        kills, run, known = [], broken.start(*broken.args), set()
        for _ in range(2):
            seen = broken.requests()
            more = max(1, int(rng.uniform(0.1, 0.8) * max(clean_calls - seen, 1)))
            if not broken.kill_after(run, more):
                break
            killed = broken.killed_run(known)
            known = {a.name for a in find_run_areas(broken.home / "store", "")}
            kills.append((killed, broken.requests()))
            run = broken.start("run", "--resume", killed)
        final = broken.finish(run)
        broken_calls, broken_wall = broken.requests(), time.perf_counter() - started
        broken.close()

        lost = duplicated = 0
        for asset, names in KEYS.items():
            want = Counter(tuple(r[n] for n in names) for r in table(clean, asset, key, clean_run))
            got = Counter(tuple(r[n] for n in names) for r in table(broken, asset, key, final))
            lost += sum((want - got).values())
            duplicated += sum(n - 1 for n in got.values() if n > 1)
        statuses = {r["case_id"]: r["status"] for r in table(broken, "statuses", key, final)}
        clean_statuses = {r["case_id"]: r["status"] for r in table(clean, "statuses", key, clean_run)}
        equal = statuses == clean_statuses
        (summary,) = table(broken, "run_summary", key, final)

        print(
            f"{args.cases} cases, judge on, seed {args.seed}, concurrency {args.concurrency}, provider answering after "
            f"{args.delay * 1000:.0f} ms; faults per request name: 429 10%, 500 10%, hang 5%, garbage 5%"
        )
        print(
            f"unbroken run:       {clean_calls} provider requests in {clean_wall:.1f} s; statuses {dict(Counter(clean_statuses.values()))}"
        )
        moments = (
            ", ".join(f"after {at} requests ({run_id[:8]})" for run_id, at in kills) or "never (the run ended first)"
        )
        print(f"killed {len(kills)} times: {moments}")
        print(
            f"killed and resumed: {broken_calls} provider requests in {broken_wall:.1f} s; "
            f"calls / unbroken {broken_calls / clean_calls:.3f} (+{broken_calls - clean_calls}); the last resume reused "
            f"{summary['agent_calls_saved']} replies and {summary['judge_calls_saved']} judge samples"
        )
        print(f"rows lost: {lost}")
        print(f"rows duplicated: {duplicated}")
        print(f"statuses equal to the unbroken run's: {'yes' if equal else 'no'}")
        if lost or duplicated or not equal:
            sys.exit(1)
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()

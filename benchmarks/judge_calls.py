"""The judge stage's calls: 100 generated cases plus the golden calibration set, judged as a run judges them
(`judge_suite`, every call made in the litellm worker process), against a local OpenAI-compatible judge that answers
after a fixed delay; prints the calls' wall time against the ideal of the stage's two phases (calibration, then the
cases of the groups it calibrated: each phase's calls in waves of `concurrency`, each wave one delay), where the calls
waited, and the server's observed peak of concurrent requests.

    .venv/bin/python benchmarks/judge_calls.py [--cases 100] [--concurrency 32] [--delay 0.2] [--repeat 1] [--in-process] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from kindgi_eval.agents.litellm import LitellmJudge  # noqa: E402
from kindgi_eval.agents.mock import MockAgent  # noqa: E402
from kindgi_eval.inputs.suite_folder import load_suite  # noqa: E402
from kindgi_eval.inputs.tenant_file import load_tenant  # noqa: E402
from kindgi_eval.kinds import models_of  # noqa: E402
from kindgi_eval.llm import start_worker, stop_worker, workers_for  # noqa: E402
from kindgi_eval.llm.worker import running  # noqa: E402
from kindgi_eval.rules import SAMPLES, Completion, parse_model  # noqa: E402
from kindgi_eval.steps.agent_replies import turn_of  # noqa: E402
from kindgi_eval.steps.judge_samples import case_subjects, judge_suite  # noqa: E402
from kindgi_eval_tests.fake_provider import Answer, FakeProvider, fenced  # noqa: E402


class TimedJudge:
    """The judge under test, each call's start and end noted (on this process's clock) for where the calls waited."""

    def __init__(self, judge: LitellmJudge):
        self.judge = judge
        self.name = judge.name
        self.calls: list[tuple[float, float, bool]] = []
        """(start, end, is a calibration call) of every call."""
        self.calibration_replies: set[str] = set()

    async def grade(
        self, messages: list[dict[str, str]], *, timeout_s: float, schema: dict | None = None
    ) -> Completion:
        started = time.perf_counter()
        completion = await self.judge.grade(messages, timeout_s=timeout_s, schema=schema)
        is_calibration = fenced({"messages": messages}, "reply") in self.calibration_replies
        self.calls.append((started, time.perf_counter(), is_calibration))
        return completion


def phases_ideal(calibration_calls: int, case_calls: int, concurrency: int, delay: float) -> float:
    """The least time the two phases take one after the other: each in full waves of `concurrency` calls."""
    return (math.ceil(calibration_calls / concurrency) + math.ceil(case_calls / concurrency)) * delay


def workers_cpu_s(workers) -> float:
    """User + system CPU of the running litellm workers, from /proc: the first, and its children (a forked sibling)."""
    if workers is None:
        return 0.0
    first = workers.first.process.pid
    pids = [first, *Path(f"/proc/{first}/task/{first}/children").read_text().split()]
    fields = [Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split() for pid in pids]
    return sum(int(f[11]) + int(f[12]) for f in fields) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=100)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--delay", type=float, default=0.2)
    parser.add_argument("--repeat", type=int, default=1, help="judgings of the same cases; medians are shown")
    parser.add_argument("--model", default="bench-judge", help="model name the server is asked for (priced or not)")
    parser.add_argument(
        "--in-process", action="store_true", help="make the calls in this process, not in the litellm worker"
    )
    parser.add_argument(
        "--workers", type=int, help="litellm worker processes (default: as a run at this concurrency on this machine)"
    )
    parser.add_argument("--json", action="store_true", help="end with one line of JSON: the medians, for whole_run.py")
    args = parser.parse_args()

    golden = load_suite(REPO / "evals/golden", models_of=models_of)
    tenant = load_tenant(None).tenant
    labels = {" ".join(item.reply): item.label for item in golden.calibration}
    in_flow = [c for c in golden.cases if not c.expect.escalate]  # escalating cases get no rubric
    cases = [in_flow[n % len(in_flow)].model_copy(update={"id": f"case-{n}"}) for n in range(args.cases)]
    agent = MockAgent(tenant)
    replies = {c.id: asyncio.run(agent.answer(turn_of(c, tenant.tenant))).reply.messages for c in cases}

    def judge(request: dict) -> Answer:
        reply = fenced(request, "reply")
        label = labels.get(reply, "pass")  # calibration replies get their hand label, so every group calibrates
        evidence = reply[:20] if label == "fail" else ""
        return Answer(json.dumps({"verdict": label, "evidence": evidence, "reason": "bench"}), delay_s=args.delay)

    server = FakeProvider(judge)
    child = server.serve_in_child()
    runs = []
    try:
        os.environ["OPENAI_API_KEY"] = "sk-bench-not-a-key"
        os.environ["OPENAI_BASE_URL"] = server.base_url
        if not args.in_process:
            start_worker(
                args.workers or workers_for(args.concurrency, os.cpu_count())
            )  # as `kindgi-eval run` starts them
            while len(running().ready) < len(running()._started):  # a second takes calls once it answers
                time.sleep(0.05)
        workers = [] if args.in_process else [w.process.pid if w.process else None for w in running().ready]
        # imports litellm, or waits for the worker to have: not part of judging
        judge_model = TimedJudge(LitellmJudge(parse_model(f"openai:{args.model}")))
        judge_model.calibration_replies = {" ".join(item.reply) for item in golden.calibration}
        for _ in range(args.repeat):
            judge_model.calls.clear()
            served = server.stats()["requests"]
            cpu_before, worker_before = time.process_time(), workers_cpu_s(running())
            started = time.perf_counter()
            samples = asyncio.run(
                judge_suite(
                    judge_model,
                    golden.calibration,
                    case_subjects(cases, replies),
                    catalogue=tenant.catalogue_text(),
                    concurrency=args.concurrency,
                    timeout_s=30,
                )
            )
            wall = time.perf_counter() - started
            cpu_here = time.process_time() - cpu_before
            cpu_worker = workers_cpu_s(running()) - worker_before
            calls = server.stats()["requests"] - served
            calibration = [c for c in judge_model.calls if c[2]]
            cases_calls = [c for c in judge_model.calls if not c[2]]
            runs.append(
                {
                    "wall": wall,
                    "cpu": cpu_here + cpu_worker,
                    "cpu_worker": cpu_worker,
                    "calls": calls,
                    "invalid": sum(s.vote == "invalid" for s in samples),
                    "calibration_calls": len(calibration),
                    "calibration_done": max((c[1] for c in calibration), default=started) - started,
                    "first_case_call": min((c[0] for c in cases_calls), default=started) - started,
                    "latency": statistics.median(c[1] - c[0] for c in judge_model.calls),
                }
            )
        peak = server.stats()["peak"]
    finally:
        stop_worker()
        child.kill()
    figures = {field: statistics.median(r[field] for r in runs) for field in runs[0]}
    calibration_calls = len(golden.calibration) * SAMPLES
    ideal = phases_ideal(calibration_calls, int(figures["calls"]) - calibration_calls, args.concurrency, args.delay)
    where = (
        "this process"
        if args.in_process
        else f"{len(workers)} litellm worker process{'es' if len(workers) > 1 else ''}"
    )
    print(
        f"{args.cases} cases, {figures['calls']:.0f} judge calls ({figures['invalid']:.0f} invalid samples), concurrency "
        f"{args.concurrency}, calls made in {where}; median of {args.repeat}; load average {os.getloadavg()[0]:.2f}"
    )
    print(
        f"CPU {figures['cpu']:.2f} s ({1000 * figures['cpu'] / figures['calls']:.1f} ms per call), of which the worker's "
        f"{figures['cpu_worker']:.2f} s ({1000 * figures['cpu_worker'] / figures['calls']:.1f} ms per call)"
    )
    print(
        f"calibration's last reply at {figures['calibration_done']:.2f} s; the first case call at {figures['first_case_call']:.2f} s; "
        f"a call's median latency {figures['latency'] * 1000:.0f} ms (the server's delay {args.delay * 1000:.0f} ms)"
    )
    print(
        f"wall {figures['wall']:.2f} s, ideal of the two phases {ideal:.2f} s, ratio {figures['wall'] / ideal:.2f}  (goal <= 1.15)"
    )
    print(f"server peak concurrency {peak}  (goal {args.concurrency})")
    if args.json:
        print(
            json.dumps({**figures, "cases": args.cases, "concurrency": args.concurrency, "ideal": ideal, "peak": peak})
        )


if __name__ == "__main__":
    main()

"""Judging throughput: 100 generated cases plus the golden calibration set, through litellm's real client,
against a local OpenAI-compatible judge that answers after a fixed delay; prints wall time against the
ideal (calls x delay / concurrency) and the server's observed peak of concurrent requests.

    .venv/bin/python benchmarks/judge_calls.py [--cases 100] [--concurrency 32] [--delay 0.2]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
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
from kindgi_eval.rules.model_names import parse_model  # noqa: E402
from kindgi_eval.steps.agent_replies import turn_of  # noqa: E402
from kindgi_eval.steps.judge_samples import case_subjects, judge_suite  # noqa: E402
from kindgi_eval_tests.fake_provider import Answer, FakeProvider, fenced  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=100)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--delay", type=float, default=0.2)
    parser.add_argument("--model", default="bench-judge", help="model name the server is asked for (priced or not)")
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
    try:
        os.environ["OPENAI_API_KEY"] = "sk-bench-not-a-key"
        os.environ["OPENAI_BASE_URL"] = server.base_url
        judge_model = LitellmJudge(parse_model(f"openai:{args.model}"))  # imports litellm: not part of judging
        started, cpu_started = time.perf_counter(), time.process_time()
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
        wall, cpu = time.perf_counter() - started, time.process_time() - cpu_started
        stats = server.stats()
    finally:
        child.kill()
    calls = stats["requests"]
    ideal = calls * args.delay / args.concurrency
    invalid = sum(s.vote == "invalid" for s in samples)
    print(f"{args.cases} cases, {calls} judge calls ({invalid} invalid samples), concurrency {args.concurrency}")
    print(f"client CPU {cpu:.2f} s ({1000 * cpu / calls:.1f} ms per call: above the ideal wall time, the client is the bottleneck)")
    print(f"wall {wall:.2f} s, ideal {ideal:.2f} s, ratio {wall / ideal:.2f}  (goal <= 1.3)")
    print(f"server peak concurrency {stats['peak']}  (goal {args.concurrency})")


if __name__ == "__main__":
    main()

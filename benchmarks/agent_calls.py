"""Agent-call throughput: 400 cases through the litellm demo agent (prompt, litellm's real client, retries and
circuit, reply reading, guardrails, the deadline race) against a local OpenAI-compatible server that answers
after 200 ms, at each concurrency; beside it, the same 400 calls from bare asyncio loops on the same machine.

    .venv/bin/python benchmarks/agent_calls.py [--calls 400] [--concurrency 16 64] [--delay 0.2] [--repeat 3]

Prints, per concurrency C: wall time over the ideal ceil(calls / C) x delay, and the server's observed peak of
requests in flight, for
  - product:      collect_replies over LitellmAgent, as `kindgi-eval run --agent-model` does;
  - bare litellm: asyncio.gather + a semaphore around litellm.acompletion with the same messages;
  - bare aiohttp: the same loop posting raw JSON with aiohttp, no litellm: the floor of this machine.
The goals: product within 1.15 of the ideal and within 1.1 of the bare loop, with peak concurrency equal to C.
The server is asyncio (aiohttp) in a forked child, so that neither its threads nor its interpreter lock are\nwhat is measured.
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
from collections.abc import Awaitable, Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))  # its neighbour chat_server.py

import chat_server  # noqa: E402

from kindgi_eval.agents.litellm import LitellmAgent  # noqa: E402
from kindgi_eval.inputs.suite_folder import load_suite  # noqa: E402
from kindgi_eval.inputs.tenant_file import load_tenant  # noqa: E402
from kindgi_eval.kinds import models_of  # noqa: E402
from kindgi_eval.llm.calls import _litellm, forget_clients  # noqa: E402
from kindgi_eval.prompts.agent import agent_messages  # noqa: E402
from kindgi_eval.rules.model_names import parse_model  # noqa: E402
from kindgi_eval.steps.agent_replies import (
    collect_replies,  # noqa: E402
    turn_of,  # noqa: E402
)

MODEL = "openai:bench-agent"
REPLY = json.dumps(
    {"messages": ["The Foundation Course is $450. Upfront or instalments?"], "escalate": False, "reason": None}
)


def measure(run: Callable[[str], Awaitable[int]], delay: float) -> tuple[float, int, int]:
    """(wall seconds, server peak, requests served) of one batch against a fresh server in a child process."""
    child, base_url = chat_server.start(delay, REPLY)
    try:
        os.environ["OPENAI_BASE_URL"] = base_url
        forget_clients()
        started = time.perf_counter()
        asyncio.run(run(base_url))
        wall = time.perf_counter() - started
        stats = chat_server.stats(base_url)
    finally:
        child.kill()
        child.join()
    return wall, stats["peak"], stats["requests"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=400)
    parser.add_argument("--concurrency", type=int, nargs="*", default=[16, 64])
    parser.add_argument("--delay", type=float, default=0.2)
    parser.add_argument("--repeat", type=int, default=3, help="runs per figure; the median is shown")
    args = parser.parse_args()

    tenant = load_tenant(None).tenant
    golden = load_suite(REPO / "evals/golden", models_of=models_of)
    in_flow = [c for c in golden.cases if not c.expect.escalate and not c.nudge]  # every one reaches the model
    turns = [
        turn_of(in_flow[n % len(in_flow)].model_copy(update={"id": f"case-{n}"}), tenant.tenant)
        for n in range(args.calls)
    ]
    os.environ["OPENAI_API_KEY"] = "sk-bench-not-a-key"
    litellm = _litellm()  # its import takes seconds and is paid once per process: not part of any figure
    import aiohttp

    agent = LitellmAgent(parse_model(MODEL), tenant, timeout_s=60)
    requests = [agent_messages(tenant, t) for t in turns]

    def product(concurrency: int) -> Callable[[str], Awaitable[int]]:
        async def run(base_url: str) -> int:
            rows = await collect_replies(agent, turns, concurrency=concurrency, deadline_ms=60_000)
            failed = [r.error for r in rows if r.error]
            assert not failed, failed[:3]
            return len(rows)

        return run

    def bare_litellm(concurrency: int) -> Callable[[str], Awaitable[int]]:
        async def run(base_url: str) -> int:
            slots = asyncio.Semaphore(concurrency)

            async def one(messages: list[dict[str, str]]) -> str:
                async with slots:
                    response = await litellm.acompletion(
                        model=parse_model(MODEL).litellm_name,
                        messages=messages,
                        timeout=60,
                        num_retries=0,
                        max_retries=0,
                    )
                    return response.choices[0].message.content

            return len(await asyncio.gather(*(one(m) for m in requests)))

        return run

    def bare_aiohttp(concurrency: int) -> Callable[[str], Awaitable[int]]:
        async def run(base_url: str) -> int:
            slots = asyncio.Semaphore(concurrency)
            headers = {"Authorization": "Bearer sk-bench-not-a-key"}
            async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=concurrency)) as session:

                async def one(messages: list[dict[str, str]]) -> str:
                    async with slots:
                        body = {"model": "bench-agent", "messages": messages}
                        async with session.post(f"{base_url}/chat/completions", json=body, headers=headers) as response:
                            return (await response.json())["choices"][0]["message"]["content"]

                return len(await asyncio.gather(*(one(m) for m in requests)))

        return run

    print(f"{args.calls} agent calls, server answering after {args.delay * 1000:.0f} ms, median of {args.repeat} runs")
    for concurrency in args.concurrency:
        ideal = math.ceil(args.calls / concurrency) * args.delay
        figures = {}
        for label, make in (("product", product), ("bare litellm", bare_litellm), ("bare aiohttp", bare_aiohttp)):
            runs = [measure(make(concurrency), args.delay) for _ in range(args.repeat)]
            wall = statistics.median(r[0] for r in runs)
            peak = max(r[1] for r in runs)
            served = {r[2] for r in runs}
            figures[label] = wall
            print(
                f"C={concurrency:<3} {label:<13} wall {wall:5.2f} s  ideal {ideal:4.2f} s  ratio {wall / ideal:4.2f}  "
                f"peak {peak:>3}  requests {'/'.join(map(str, sorted(served)))}"
            )
        print(
            f"C={concurrency:<3} product / bare litellm {figures['product'] / figures['bare litellm']:.3f}  "
            f"(goal <= 1.1); product / bare aiohttp {figures['product'] / figures['bare aiohttp']:.3f}"
        )


if __name__ == "__main__":
    main()

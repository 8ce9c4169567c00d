"""Scenarios: what playing conversations turn by turn costs beside the agent's own calls, and what a replay and a
second persona run do not pay again.

    .venv/bin/python benchmarks/scenarios.py [--scenarios 20] [--turns 6] [--delay 0.2] [--repeat 3]

Against a scripted OpenAI-compatible server in a forked child (kindgi_eval_tests/fake_provider.py) that answers the
agent after `delay` seconds, each reply a function of the request (so no two turns of a conversation are alike):
  - playing: the `agent_replies` stage playing N scripted scenarios of T moves each over the litellm agent, all N at
    once, beside a bare litellm script making the same N x T calls as N sequential chains (each turn's request built
    from the replies before it, as the stage builds it), all chains at once. Goal: the stage within 1.3x the script.
  - replay: `kindgi-eval run` of the suite with a judge, then `kindgi-eval replay --from` it; the calls the replay
    made, counted by model at the server. Goal: no agent call and no contact-model call.
  - persona: `kindgi-eval run` of N persona scenarios with the contact played by a model at the server, twice against
    the same agent. Goal: the second run makes no contact-model call and stores the same transcript.
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
from collections import Counter
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from kindgi_eval.agents.litellm import LitellmAgent  # noqa: E402
from kindgi_eval.inputs.suite_folder import load_suite  # noqa: E402
from kindgi_eval.inputs.tenant_file import load_tenant  # noqa: E402
from kindgi_eval.kinds import models_of  # noqa: E402
from kindgi_eval.llm.calls import _litellm, forget_clients  # noqa: E402
from kindgi_eval.prompts.agent import agent_messages, read_reply  # noqa: E402
from kindgi_eval.rules import AgentTurn, Scenario, Turn  # noqa: E402
from kindgi_eval.rules.model_names import parse_model  # noqa: E402
from kindgi_eval.steps import ask_agent, suite_rows  # noqa: E402
from kindgi_eval_tests.fake_provider import Answer, FakeProvider, fenced  # noqa: E402

AGENT = "openai:bench-agent"
JUDGE = "openai:bench-judge"
CONTACT = "openai:bench-contact"
CLI = Path(sys.executable).parent / "kindgi-eval"
MOVES = [
    "how much is the foundation course?",
    "that's more than I wanted",
    "still too much for me",
    "any deal at all?",
    "what do I get for it?",
    "ok, and when does it start?",
]


def answer_with(delay: float):
    """The server's script: the agent's reply names how long the conversation is (no two turns alike); the judge
    passes every reply; the contact model says a line per turn, then is done."""

    def script(request: dict[str, Any]) -> Answer:
        model = request["model"]
        if model == "bench-judge":
            if "BAD" in fenced(request, "reply"):  # a calibration item labelled fail
                return Answer(json.dumps({"verdict": "fail", "evidence": "BAD", "reason": "says BAD"}), delay_s=delay)
            return Answer(json.dumps({"verdict": "pass", "evidence": "", "reason": "fine"}), delay_s=delay)
        if model == "bench-contact":
            said = fenced(request, "history").count("contact: ")
            line = MOVES[said] if said < len(MOVES) else ""
            return Answer(json.dumps({"message": line, "done": not line}), delay_s=delay)
        size = sum(len(m["content"]) for m in request["messages"])
        reply = {
            "messages": [f"Noted ({size} characters so far). The Foundation Course is $450. Which day suits you?"],
            "escalate": False,
            "reason": None,
        }
        return Answer(json.dumps(reply), delay_s=delay)

    return script


def write_suite(folder: Path, scenarios: int, turns: int, *, persona: bool = False) -> Path:
    """A suite folder of `scenarios` scenarios (scripted, or persona ones), and a pass and a fail calibration item for
    each rubric dimension, which the server's judge agrees with, so it calibrates and grades every turn."""
    folder.mkdir(parents=True)
    lines = []
    for n in range(scenarios):
        side = (
            {
                "persona": f"Contact {n}, careful with money",
                "goal": "the foundation course, cheaply",
                "max_turns": turns,
            }
            if persona
            else {"moves": [f"{MOVES[t % len(MOVES)]} ({n})" for t in range(turns)]}
        )
        lines.append(
            json.dumps(
                {
                    "id": f"scenario-{n}",
                    "contact": {"funnel_stage": "offer", "course": "foundation"},
                    **side,
                    "expect": {"escalate": False},
                    "must_not_contain": ["discount"],
                }
            )
        )
    (folder / "scenarios.jsonl").write_text("\n".join(lines) + "\n")
    items = [
        {"id": f"{g}-{label}", "text": "how much?", "reply": [reply], "criterion": g, "label": label}
        for g in ("implicit_concession", "semantic_repetition", "answers_the_question")
        for label, reply in (("pass", "It is $450."), ("fail", "BAD."))
    ]
    (folder / "calibration.jsonl").write_text("".join(json.dumps(i) + "\n" for i in items))
    return folder


def serve(delay: float) -> tuple[FakeProvider, Any]:
    server = FakeProvider(answer_with(delay))
    child = server.serve_in_child()
    os.environ["OPENAI_BASE_URL"] = server.base_url
    forget_clients()
    return server, child


def playing(args: argparse.Namespace, folder: Path) -> None:
    """The stage and the bare script, each against a fresh server, the median of `repeat` runs."""
    tenant = load_tenant(None).tenant
    suite = load_suite(folder, models_of=models_of)
    rows = suite_rows(suite, tenant.tenant, "bench")
    litellm = _litellm()  # its import takes seconds, paid once per process: part of no figure
    agent = LitellmAgent(parse_model(AGENT), tenant, timeout_s=60)

    def stage() -> int:
        replies = ask_agent(agent, rows, concurrency=args.scenarios, deadline_ms=60_000)
        failed = [r.error for r in replies if r.error]
        assert not failed, failed[:3]
        return sum(len(r.turns) for r in replies)

    async def chain(scenario: Scenario) -> int:
        history: list[Turn] = []
        for move in scenario.moves or ():
            turn = AgentTurn(
                tenant=tenant.tenant, case_id=scenario.id, text=move, history=tuple(history), contact=scenario.contact
            )
            response = await litellm.acompletion(
                model=parse_model(AGENT).litellm_name,
                messages=agent_messages(tenant, turn),
                timeout=60,
                num_retries=0,
                max_retries=0,
            )
            reply = read_reply(response.choices[0].message.content)
            history += [Turn(role="user", text=move), *(Turn(role="agent", text=m) for m in reply.messages)]
        return len(scenario.moves or ())

    def bare() -> int:
        async def everything() -> int:
            return sum(await asyncio.gather(*(chain(s) for s in suite.scenarios)))

        return asyncio.run(everything())

    calls = args.scenarios * args.turns
    ideal = args.turns * args.delay
    print(
        f"playing: {args.scenarios} scenarios of {args.turns} moves, {calls} agent calls, server answering after "
        f"{args.delay * 1000:.0f} ms (ideal {ideal:.2f} s: {args.turns} calls in a row), median of {args.repeat}"
    )
    walls = {}
    for label, arm in (("stage", stage), ("bare litellm", bare)):
        measured = []
        for attempt in range(args.repeat + 1):  # the first warms litellm's clients and is not counted
            server, child = serve(args.delay)
            try:
                started = time.perf_counter()
                made = arm()
                if attempt:
                    measured.append(time.perf_counter() - started)
                seen = server.stats()
            finally:
                child.kill()
                child.join()
            assert made == calls and seen["requests"] == calls, (made, seen)
        walls[label] = statistics.median(measured)
        print(f"  {label:<13} wall {walls[label]:5.2f} s  ideal ratio {walls[label] / ideal:4.2f}  peak {seen['peak']}")
    print(f"  stage / bare litellm {walls['stage'] / walls['bare litellm']:.3f}  (goal <= 1.3)")


def cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(CLI), *args], env=env, capture_output=True, text=True, timeout=600)


def run_id(done: subprocess.CompletedProcess[str]) -> str:
    return next(line.split()[1] for line in done.stderr.splitlines() if line.startswith("run "))


def by_model(server: FakeProvider, since: int) -> Counter:
    return Counter(r["model"] for r in server.requests_seen()[since:])


def replaying(args: argparse.Namespace, folder: Path, home: Path) -> None:
    """A judged run, then a replay of it: the calls each made, by model."""
    server, child = serve(args.delay)
    env = {**os.environ, "KINDGI_HOME": str(home), "DAGSTER_HOME": str(home / "dagster")}
    try:
        started = time.perf_counter()
        done = cli(
            "run",
            "--agent-model",
            AGENT,
            "--judge-model",
            JUDGE,
            "--eval-dir",
            str(folder),
            "--concurrency",
            str(args.scenarios),
            env=env,
        )
        ran = time.perf_counter() - started
        assert done.returncode == 0, done.stderr
        before = len(server.requests_seen())
        ran_calls = by_model(server, 0)
        started = time.perf_counter()
        replayed = cli(
            "replay", "--from", run_id(done), "--judge-model", JUDGE, "--concurrency", str(args.scenarios), env=env
        )
        replay_wall = time.perf_counter() - started
        assert replayed.returncode == 0, replayed.stderr
        calls = by_model(server, before)
    finally:
        child.kill()
        child.join()
    judge_calls = calls["bench-judge"]
    print(
        f"replay: run {ran:5.2f} s with {ran_calls['bench-agent']} agent and {ran_calls['bench-judge']} judge calls; "
        f"replay {replay_wall:5.2f} s with {calls['bench-agent']} agent, {calls['bench-contact']} contact-model and "
        f"{judge_calls} judge calls (goal: 0 agent, 0 contact; the judge's {judge_calls} calls at concurrency "
        f"{args.scenarios} take at least {judge_calls / args.scenarios * args.delay:.2f} s)"
    )


def persona(args: argparse.Namespace, folder: Path, home: Path) -> None:
    """Two runs of the persona suite against the same agent: the contact-model calls of each, and whether the
    stored transcripts are the same."""
    server, child = serve(args.delay)
    env = {**os.environ, "KINDGI_HOME": str(home), "DAGSTER_HOME": str(home / "dagster")}
    runs, contact_calls, walls = [], [], []
    try:
        for _ in range(2):
            before = len(server.requests_seen())
            started = time.perf_counter()
            done = cli(
                "run",
                "--agent-model",
                AGENT,
                "--contact-model",
                CONTACT,
                "--eval-dir",
                str(folder),
                "--concurrency",
                str(args.scenarios),
                env=env,
            )
            walls.append(time.perf_counter() - started)
            assert done.returncode == 0, done.stderr
            runs.append(run_id(done))
            contact_calls.append(by_model(server, before)["bench-contact"])
    finally:
        child.kill()
        child.join()
    query = "SELECT case_id, turn, contact_by, contact_text, messages, escalate FROM turns WHERE run_id = '{}' ORDER BY case_id, turn"
    stored = [cli("sql", query.format(r), "--format", "json", env=env).stdout for r in runs]
    turns = len(json.loads(stored[0]))
    print(
        f"persona: first run {walls[0]:5.2f} s, {contact_calls[0]} contact-model calls; second run {walls[1]:5.2f} s, "
        f"{contact_calls[1]} contact-model calls (goal 0); transcripts of {turns} turns "
        f"{'identical' if stored[0] == stored[1] else 'DIFFERENT'}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenarios", type=int, default=20)
    parser.add_argument("--turns", type=int, default=6)
    parser.add_argument("--delay", type=float, default=0.2)
    parser.add_argument("--repeat", type=int, default=3, help="runs per playing figure; the median is shown")
    parser.add_argument(
        "--playing-only", action="store_true", help="measure the playing only, not the replay and persona runs"
    )
    args = parser.parse_args()
    os.environ["OPENAI_API_KEY"] = "sk-bench-not-a-key"
    with tempfile.TemporaryDirectory() as tmp:
        scripted = write_suite(Path(tmp) / "scripted", args.scenarios, args.turns)
        playing(args, scripted)
        if args.playing_only:
            return
        replaying(args, scripted, Path(tmp) / "home-replay")
        persona(
            args,
            write_suite(Path(tmp) / "persona", args.scenarios, args.turns, persona=True),
            Path(tmp) / "home-persona",
        )


if __name__ == "__main__":
    main()

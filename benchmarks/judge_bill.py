"""The judge's bill for one judged run of a 40-case suite over a catalogue of some 1,500 tokens: the requests the judge
stage sends (made by the product's own code, `judge_suite`, answered by the offline demo judge), their input and
output tokens split by what each request repeats, and their price by litellm's cost map for an OpenAI and an
Anthropic judge, with and without prompt caching and the batch API.

Prices are litellm's (`cost_per_token` for a call, `batch_cost_calculator` for a batch request), offline. Cached
tokens are what each provider's documented rule gives for these requests, sent in this order:
- OpenAI caches automatically: a request's longest prefix already sent in full, once it is 1,024 tokens or more, in
  steps of 128 tokens, is read from the cache;
- Anthropic caches only up to a breakpoint the request marks (`cache_control`): a marked prefix of at least the
  model's minimum (1,024 tokens for Sonnet) is written at the first request that carries it (at the cache-write price)
  and read by every later one.
A provider's cache is best effort (a request routed to another machine misses it), so the cached figures are what the
requests make possible, not a guarantee. Token counts are litellm's `token_counter` for each model.

    .venv/bin/python benchmarks/judge_bill.py [--cases 40] [--models openai/gpt-4o-mini anthropic/claude-sonnet-4-5]
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import json
import os
import sys
from collections import Counter
from pathlib import Path
from typing import Any, NamedTuple

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("LITELLM_LOG", "ERROR")
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from kindgi_eval.agents.demo_judge import DemoJudge  # noqa: E402
from kindgi_eval.agents.mock import MockAgent  # noqa: E402
from kindgi_eval.inputs.suite_folder import load_suite  # noqa: E402
from kindgi_eval.inputs.tenant_file import load_tenant  # noqa: E402
from kindgi_eval.kinds import models_of  # noqa: E402
from kindgi_eval.llm.calls import with_breakpoints  # noqa: E402
from kindgi_eval.prompts import unfence  # noqa: E402
from kindgi_eval.rules import Completion, Course, Tenant, parse_model  # noqa: E402
from kindgi_eval.steps.agent_replies import turn_of  # noqa: E402
from kindgi_eval.steps.judge_samples import case_subjects, judge_suite  # noqa: E402

OPENAI_MIN, OPENAI_STEP = 1024, 128
"""OpenAI's automatic cache: the shortest prefix it caches, and the steps a cached prefix grows in."""
ANTHROPIC_MIN = {"claude-sonnet-4-5": 1024, "claude-haiku-4-5": 4096, "claude-3-5-haiku-20241022": 2048}
"""Anthropic's shortest cacheable prefix per model (a shorter marked prefix is sent at the full price)."""

TOPICS = [
    (
        "python",
        "Python for Beginners",
        "Ten weeks from your first line of Python to small scripts that tidy files and read spreadsheets.",
        "Wednesdays, 6:30pm to 8:30pm",
        "No experience needed.",
        "$650",
        "3 payments of $230",
    ),
    (
        "ux",
        "UX Design Essentials",
        "Eight weeks on user research, wireframes and prototypes in Figma, ending with a case study for your portfolio.",
        "Mondays and Wednesdays, 7pm to 9pm",
        "No design experience needed; bring a laptop that runs Figma.",
        "$1,100",
        "4 payments of $295",
    ),
    (
        "cyber",
        "Cyber Security Foundations",
        "Twelve weeks on networks, passwords, phishing and how attacks work, with hands-on labs.",
        "Tuesdays and Thursdays, 6pm to 9pm",
        "Comfortable using a computer; no coding needed.",
        "$1,850",
        "6 payments of $325",
    ),
    (
        "cloud",
        "Cloud Fundamentals",
        "Six weeks on servers, storage and deployment, preparing you for an entry-level cloud certificate.",
        "Saturdays, 9am to 1pm",
        "Some experience with the command line helps.",
        "$980",
        "3 payments of $340",
    ),
    (
        "mobile",
        "Mobile App Bootcamp",
        "Fourteen weeks building iPhone and Android apps with React Native, from sketch to store.",
        "Monday to Thursday, 6pm to 9pm",
        "You should know JavaScript basics, or finish the Foundation Course first.",
        "$3,200",
        "8 payments of $420",
    ),
    (
        "ai",
        "Practical AI for Work",
        "Four evenings on using AI assistants well and safely at work: prompts, checking answers, privacy.",
        "Thursdays, 6pm to 8pm",
        "None.",
        "$290",
        "2 payments of $150",
    ),
    (
        "sql",
        "SQL in Practice",
        "Six weeks of queries, joins and reports on real datasets, ending with a dashboard you build yourself.",
        "Tuesdays, 6pm to 9pm",
        "Basic spreadsheet skills.",
        "$720",
        "3 payments of $250",
    ),
    (
        "product",
        "Product Management Intro",
        "Eight weeks on discovery, roadmaps, metrics and working with engineers, taught by working product managers.",
        "Wednesdays, 6pm to 9pm",
        "A year of work experience in any field.",
        "$1,400",
        "4 payments of $370",
    ),
    (
        "devops",
        "DevOps Workshop",
        "Ten weeks on Git, CI pipelines, containers and monitoring, with a project deployed end to end.",
        "Saturdays, 10am to 3pm",
        "You should be able to write a small program in any language.",
        "$1,650",
        "5 payments of $350",
    ),
    (
        "marketing",
        "Digital Marketing Sprint",
        "Six weeks on search, social and email campaigns, with a budget to run a real ad.",
        "Mondays, 6pm to 9pm",
        "None.",
        "$840",
        "3 payments of $295",
    ),
    (
        "game",
        "Game Development Weekend",
        "Five weekends building a 2D game in Godot, from the first sprite to a playable level.",
        "Saturdays and Sundays, 10am to 2pm",
        "Some experience with any programming language.",
        "$1,050",
        "3 payments of $365",
    ),
    (
        "kids",
        "Coding Club for Teens",
        "A term of Saturday mornings for ages 13 to 17: games, websites and robots, in small groups.",
        "Saturdays, 10am to 12pm, during school terms",
        "Ages 13 to 17; a parent or guardian enrols.",
        "$380 per term",
        "2 payments of $195",
    ),
]


def large_tenant(tenant: Tenant) -> Tenant:
    """The demo tenant with a catalogue of realistic size: its own three courses and twelve more."""
    extra = tuple(
        Course(
            id=slug,
            name=name,
            keywords=[name.lower(), slug],
            description=what,
            schedule=when,
            requirements=needs,
            enrol_url=f"https://example.com/enrol/{slug}",
            prices={"upfront": upfront, "instalments": instalments},
        )
        for slug, name, what, when, needs, upfront, instalments in TOPICS
    )
    return tenant.model_copy(update={"courses": tenant.courses + extra})


class RecordingJudge:
    """The offline demo judge, every request and answer kept in the order sent."""

    def __init__(self) -> None:
        self.judge = DemoJudge()
        self.name = "bench"
        self.sent: list[tuple[list[dict[str, Any]], str]] = []

    async def grade(
        self, messages: list[dict[str, Any]], *, timeout_s: float, schema: dict | None = None
    ) -> Completion:
        completion = await self.judge.grade(messages, timeout_s=timeout_s, schema=schema)
        self.sent.append((messages, completion.content or ""))
        return completion


def text_of(content: Any) -> str:
    """A message's text, its content blocks joined."""
    return content if isinstance(content, str) else "".join(block["text"] for block in content)


def flat(messages: list[dict[str, Any]]) -> str:
    """A request as the sequence of text a provider reads, messages in order."""
    return "\x00".join(text_of(m["content"]) for m in messages)


def breakpoints(messages: list[dict[str, Any]]) -> list[int]:
    """Where, in `flat(messages)`, each content block marked `cache_control` ends."""
    ends, at = [], 0
    for n, message in enumerate(messages):
        content = message["content"]
        blocks = [{"text": content}] if isinstance(content, str) else content
        for block in blocks:
            at += len(block["text"])
            if "cache_control" in block:
                ends.append(at)
        at += 1 if n < len(messages) - 1 else 0
    return ends


class Request(NamedTuple):
    """One judge request as billed: tokens in all, read from and written to the cache, and out."""

    prompt: int
    cached: int
    written: int
    completion: int


def longest_shared(seen: list[str], text: str) -> int:
    """The length of the longest prefix `text` shares with a string in sorted `seen` (one of its neighbours has it)."""
    at = bisect.bisect_left(seen, text)
    return max((len(os.path.commonprefix([text, seen[n]])) for n in (at - 1, at) if 0 <= n < len(seen)), default=0)


def bill(
    sent: list[tuple[list[dict[str, Any]], str]], model: str, marked: list[list[dict[str, Any]]], concurrency: int
) -> list[Request]:
    """Each request's tokens as its provider caches them, in the order sent. `marked` is each request as sent to this
    provider (with its breakpoints, where the provider takes them). With `concurrency` requests in flight, a request
    finds in the cache only what the requests `concurrency` places before it and earlier carried: those are answered
    by the time it is sent, the ones in flight beside it are not."""
    import litellm

    name = model.split("/", 1)[1]
    anthropic = model.startswith(("anthropic/", "bedrock/"))
    tokens = lambda text: litellm.token_counter(model=name, text=text)  # noqa: E731
    seen: list[str] = []
    written: set[str] = set()
    writes: dict[int, list[int]] = {}
    billed = []
    texts = [flat(messages) for messages, _ in sent]
    for n, ((messages, answer), as_sent) in enumerate(zip(sent, marked)):
        text = texts[n]
        if n >= concurrency:  # answered by now: its prefix is in the cache
            answered = texts[n - concurrency]
            bisect.insort(seen, answered)
            written.update(answered[:end] for end in writes.pop(n - concurrency, []))
        prompt = litellm.token_counter(
            model=name, messages=[{"role": m["role"], "content": text_of(m["content"])} for m in messages]
        )
        cached = wrote = 0
        if anthropic:
            least = ANTHROPIC_MIN.get(name, 1024)
            marks = [(end, tokens(text[:end])) for end in breakpoints(as_sent)]
            marks = [(end, count) for end, count in marks if count >= least]
            cached = max((count for end, count in marks if text[:end] in written), default=0)
            if marks and marks[-1][1] > cached:
                wrote = marks[-1][1] - cached
            writes[n] = [end for end, _ in marks]
        else:
            shared = tokens(text[: longest_shared(seen, text)])
            cached = shared // OPENAI_STEP * OPENAI_STEP if shared >= OPENAI_MIN else 0
        billed.append(Request(prompt, cached, wrote, tokens(answer)))
    return billed


def price(billed: list[Request], model: str, *, batch: bool) -> float:
    """Dollars by litellm's cost map: a call's price, or a batch request's."""
    import litellm
    from litellm.cost_calculator import batch_cost_calculator

    total = 0.0
    for r in billed:
        usage = litellm.Usage(
            prompt_tokens=r.prompt,
            completion_tokens=r.completion,
            total_tokens=r.prompt + r.completion,
            prompt_tokens_details={"cached_tokens": r.cached, "cache_creation_tokens": r.written},
            cache_read_input_tokens=r.cached,
            cache_creation_input_tokens=r.written,
        )
        name = model.split("/", 1)[1]
        total += sum(
            batch_cost_calculator(usage, name) if batch else litellm.cost_per_token(model=name, usage_object=usage)
        )
    return total


def parts(messages: list[dict[str, Any]], model: str) -> Counter[str]:
    """A request's tokens by what it repeats: the framework text and the catalogue (every request of the run), the
    conversation and reply (every request on one reply), the criterion and the rest (the three samples of one)."""
    import litellm

    name = model.split("/", 1)[1]
    user = "".join(text_of(m["content"]) for m in messages if m["role"] == "user")
    counts: Counter[str] = Counter()
    counts["framework"] = sum(
        litellm.token_counter(model=name, text=text_of(m["content"])) for m in messages if m["role"] == "system"
    )
    counts["catalogue"] = litellm.token_counter(model=name, text=unfence(user, "catalogue") or "")
    conversation = "\n".join(unfence(user, kind) or "" for kind in ("history", "contact message", "reply"))
    counts["conversation"] = litellm.token_counter(model=name, text=conversation)
    counts["criterion"] = litellm.token_counter(model=name, text=user) - counts["catalogue"] - counts["conversation"]
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=40)
    parser.add_argument("--models", nargs="+", default=["openai/gpt-4o-mini", "anthropic/claude-sonnet-4-5"])
    parser.add_argument("--concurrency", type=int, default=8, help="judge requests in flight (a run's default: 8)")
    parser.add_argument("--json", action="store_true", help="end with one line of JSON: the prices")
    args = parser.parse_args()

    golden = load_suite(REPO / "evals/golden", models_of=models_of)
    tenant = large_tenant(load_tenant(None).tenant)
    in_flow = [c for c in golden.cases if not c.expect.escalate]  # escalating cases get no rubric
    cases = [in_flow[n % len(in_flow)].model_copy(update={"id": f"case-{n}"}) for n in range(args.cases)]
    agent = MockAgent(tenant)
    replies = {c.id: asyncio.run(agent.answer(turn_of(c, tenant.tenant))).reply.messages for c in cases}
    judge = RecordingJudge()
    samples = asyncio.run(
        judge_suite(
            judge,
            golden.calibration,
            case_subjects(cases, replies),
            catalogue=tenant.catalogue_text(),
            concurrency=1,
            timeout_s=30,
        )
    )
    calibration = sum(s.subject == "calibration" for s in samples)
    print(
        f"{args.cases} cases ({sum(len(c.criteria()) for c in cases)} criteria), {len(golden.calibration)} calibration items; "
        f"{len(judge.sent)} judge requests ({calibration} calibration, {len(judge.sent) - calibration} cases)"
    )
    figures: dict[str, dict[str, float]] = {}
    for model in args.models:
        name = model.split("/", 1)[1]
        import litellm

        print(f"\n{model}: catalogue {litellm.token_counter(model=name, text=tenant.catalogue_text())} tokens")
        split: Counter[str] = Counter()
        for messages, _ in judge.sent:
            split.update(parts(messages, model))
        ref = parse_model(model.replace("/", ":", 1))
        marked = [with_breakpoints(ref, messages) for messages, _ in judge.sent]
        billed = bill(judge.sent, model, marked, args.concurrency)
        prompt, cached = sum(r.prompt for r in billed), sum(r.cached for r in billed)
        written, completion = sum(r.written for r in billed), sum(r.completion for r in billed)
        print(
            "  input tokens by what they repeat: "
            + ", ".join(f"{k} {v:,}" for k, v in split.items())
            + " (framework and catalogue: every request; conversation: every request on one reply; criterion: its 3 samples)"
        )
        print(
            f"  input {prompt:,} tokens, of which cached {cached:,} ({cached / prompt:.0%}) and written to the cache {written:,}; "
            f"output {completion:,} tokens"
        )
        none = [Request(r.prompt, 0, 0, r.completion) for r in billed]
        prices = {
            "neither": price(none, model, batch=False),
            "cache": price(billed, model, batch=False),
            "batch": price(none, model, batch=True),
            "batch and cache": price(billed, model, batch=True),
        }
        figures[model] = prices
        for label, dollars in prices.items():
            print(f"  {label:>16}: ${dollars:.4f}  ({dollars / prices['neither']:.0%} of neither)")
        saved = 1 - prices["batch and cache"] / prices["neither"]
        print(f"  batch and cache save {saved:.0%} of the judge's price  (goal >= 50%)")
    if args.json:
        print(json.dumps(figures))


if __name__ == "__main__":
    main()

"""The judge stage through a batch API: litellm's real files and batches client against a fake provider on 127.0.0.1
serving OpenAI's files and batches endpoints, each line answered by the same script as a call would be."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections import Counter
from typing import Any

import pytest

from kindgi_eval.agents.demo_judge import verdict
from kindgi_eval.agents.litellm import LitellmJudge
from kindgi_eval.agents.mock import MockAgent
from kindgi_eval.inputs import load_suite, load_tenant
from kindgi_eval.kinds import models_of
from kindgi_eval.llm.calls import forget_clients
from kindgi_eval.rules import agree_by_group, parse_model
from kindgi_eval.steps.agent_replies import turn_of
from kindgi_eval.steps.judge_samples import (
    BatchSetup,
    case_subjects,
    graded_items,
    judge_suite,
    judge_suite_in_batches,
)
from kindgi_eval_tests.conftest import GOLDEN
from kindgi_eval_tests.fake_provider import Answer, FakeProvider, user_text

TENANT = load_tenant(None).tenant
SUITE = load_suite(GOLDEN, models_of=models_of)
CASES = [c for c in SUITE.cases if not c.expect.escalate][:8]
REPLIES = {c.id: asyncio.run(MockAgent(TENANT).answer(turn_of(c, TENANT.tenant))).reply.messages for c in CASES}
JUDGE = parse_model("openai:gpt-4o-mini")
VERDICT_FIELDS = (
    "subject",
    "subject_id",
    "source",
    "criterion",
    "group",
    "sample",
    "label",
    "vote",
    "evidence",
    "reason",
    "invalid_reason",
)


def demo_script():
    """The offline demo judge's answers, served by the fake provider: each request text's samples in the order asked."""
    seen: Counter[str] = Counter()
    lock = threading.Lock()

    def script(request: dict[str, Any]) -> Answer:
        text = user_text(request)
        with lock:
            before = seen[text]
            seen[text] += 1
        return Answer(json.dumps(verdict(text, before)))

    return script


@pytest.fixture
def serve(monkeypatch: pytest.MonkeyPatch):
    """Start a fake provider with the batches endpoints, litellm's OpenAI client pointed at it."""
    started = []

    def start(script, **options) -> FakeProvider:
        forget_clients()
        server = FakeProvider(script, **options).__enter__()
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        started.append(server)
        return server

    yield start
    for server in started:
        server.__exit__(None, None, None)
    forget_clients()


def in_batches(batch: BatchSetup, **options) -> list:
    return asyncio.run(
        judge_suite_in_batches(
            LitellmJudge(JUDGE),
            SUITE.calibration,
            case_subjects(CASES, REPLIES),
            catalogue=TENANT.catalogue_text(),
            batch=batch,
            **options,
        )
    )


def remembered() -> tuple[dict[str, str], BatchSetup]:
    ids: dict[str, str] = {}
    return ids, BatchSetup({}, ids.__setitem__, poll_s=0.01)


def verdicts(rows) -> list[tuple]:
    return [tuple(getattr(r, f) for f in VERDICT_FIELDS) for r in rows]


def test_a_batched_stage_reaches_the_verdicts_and_calibration_of_the_calls_at_the_batch_price(serve) -> None:
    server = serve(demo_script())
    called = asyncio.run(
        judge_suite(
            LitellmJudge(JUDGE),
            SUITE.calibration,
            case_subjects(CASES, REPLIES),
            catalogue=TENANT.catalogue_text(),
            concurrency=1,
            timeout_s=10,
        )
    )
    assert server.batches == {}
    serve(demo_script())  # a fresh provider, whose demo judge has seen nothing
    ids, batch = remembered()
    batched = in_batches(batch)
    assert verdicts(batched) == verdicts(called)
    assert agree_by_group(graded_items(batched)) == agree_by_group(graded_items(called))
    assert {r.vote for r in batched} >= {"pass", "fail"}  # a real mix, not all of one side
    assert sorted(ids) == ["calibration", "cases"]  # two batches: the calibration items', then the earned cases'
    # the same tokens, at gpt-4o-mini's batch price: half of a call's (litellm's cost map)
    assert sum(r.cost_usd for r in batched) == pytest.approx(sum(r.cost_usd for r in called) / 2)
    assert all(r.cost_known for r in batched)


def test_a_request_the_batch_failed_or_left_unanswered_is_an_invalid_sample_never_a_pass(serve) -> None:
    answers = demo_script()

    def refuse_some(request: dict[str, Any]) -> Answer:
        if (
            "Grade the reply against" in user_text(request)
            and "answers_the_question" in user_text(request).rsplit("Criterion to grade:", 1)[1]
        ):
            return Answer("this request is refused", status=400)
        return answers(request)

    serve(refuse_some)
    rows = in_batches(remembered()[1])
    refused = [r for r in rows if r.criterion == "answers_the_question"]
    assert refused and all(r.vote == "invalid" and "failed (HTTP 400)" in r.invalid_reason for r in refused)
    serve(demo_script(), batch_end="expired")
    rows = in_batches(remembered()[1])
    unanswered = [r for r in rows if r.invalid_reason and "ended expired" in r.invalid_reason]
    assert unanswered and all(r.vote == "invalid" for r in unanswered)
    serve(demo_script(), batch_end="failed")
    rows = in_batches(remembered()[1])
    assert rows and all(
        r.vote == "invalid" and "ended failed" in r.invalid_reason for r in rows
    )  # nothing graded, no case


def test_a_killed_attempt_s_batch_is_picked_up_again_not_sent_twice(serve) -> None:
    server = serve(demo_script())
    ids, batch = remembered()
    first = in_batches(batch)
    created = dict(server.batches)
    recorded: list = []
    again = in_batches(
        BatchSetup(dict(ids), lambda phase, batch_id: pytest.fail("no batch may be created"), poll_s=0.01),
        record=recorded.append,
    )
    assert server.batches == created  # no new batch: the same ones were read back
    assert verdicts(again) == verdicts(first)
    assert len(recorded) == len(again)  # each sample recorded as it was read
    done = {(r.subject, r.subject_id, r.source, r.criterion, r.sample): r for r in first[: len(first) // 2]}
    resumed = in_batches(BatchSetup(dict(ids), ids.__setitem__, poll_s=0.01), done=done)
    assert verdicts(resumed) == verdicts(first)


def test_the_wait_for_a_batch_sleeps_between_looks(serve) -> None:
    server = serve(demo_script(), looks_before_done=3)
    started = time.monotonic()
    in_batches(BatchSetup({}, lambda phase, batch_id: None, poll_s=0.2))
    # each batch was looked at 4 times, the three in progress each followed by a sleep of 0.2 s
    assert sorted(server.looks.values()) == [4, 4]
    assert time.monotonic() - started >= 2 * 3 * 0.2


def test_through_a_gateway_the_batch_goes_to_its_files_and_batches_endpoints(serve) -> None:
    from kindgi_eval.llm import Gateway

    server = serve(demo_script())
    ids, batch = remembered()
    gateway = LitellmJudge(
        JUDGE, gateway=Gateway(server.base_url.removesuffix("/v1"), "sk-gateway-test-key"), prepared=False
    )
    rows = asyncio.run(
        judge_suite_in_batches(
            gateway, SUITE.calibration, case_subjects(CASES, REPLIES), catalogue=TENANT.catalogue_text(), batch=batch
        )
    )
    serve(demo_script())
    direct = in_batches(remembered()[1])
    assert verdicts(rows) == verdicts(direct)
    assert sorted(ids) == ["calibration", "cases"]
    assert {r["model"] for r in server.requests} == {"openai/gpt-4o-mini"}  # named as the gateway routes it
    assert all(r.prompt_tokens and not r.cost_known for r in rows)  # the gateway prices no batch answer


@pytest.mark.parametrize(
    ("judge", "gateway", "refused"),
    [
        ("openai:gpt-4o-mini", None, False),
        ("anthropic:claude-sonnet-4-5", None, False),  # through Anthropic's own batch API
        ("groq:llama3-70b-8192", None, True),  # litellm creates no batch for Groq
        ("groq:llama3-70b-8192", "http://127.0.0.1:9", False),  # a gateway's batches are its own to route
        ("mock:demo-judge", None, False),  # an offline judge has no batch API and is asked call by call
    ],
)
def test_a_judge_whose_batches_cannot_be_sent_is_refused_before_the_run(monkeypatch, judge, gateway, refused) -> None:
    from kindgi_eval.agents.factory import make_judge
    from kindgi_eval.inputs import RunSettings
    from kindgi_eval.rules import InputError

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-not-a-real-key")
    monkeypatch.setenv("GROQ_API_KEY", "gsk-test-not-a-real-key")
    if gateway:
        monkeypatch.setenv("KINDGI_GATEWAY_URL", gateway)  # the deployment's gateway, the only one a run may name
    settings = RunSettings(agent_model="mock:agent", judge_model=judge, judge_batch=True, gateway_url=gateway)
    if refused:
        with pytest.raises(InputError) as e:
            make_judge(settings, check_only=True)
        assert e.value.problems[0].file == "EVAL_JUDGE_BATCH" and "no batch API" in e.value.problems[0].message
    else:
        assert make_judge(settings, check_only=True) is not None


def test_an_anthropic_judge_s_batch_goes_through_its_message_batches_api_with_its_breakpoints(
    serve, monkeypatch
) -> None:
    from litellm.cost_calculator import batch_cost_calculator

    from kindgi_eval.llm.calls import BREAKPOINT, _litellm

    server = serve(demo_script(), caching=True)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-not-a-real-key")
    monkeypatch.setenv("ANTHROPIC_API_BASE", server.base_url.removesuffix("/v1"))
    ids, batch = remembered()
    rows = asyncio.run(
        judge_suite_in_batches(
            LitellmJudge(parse_model("anthropic:claude-sonnet-4-5"), prepared=False),
            SUITE.calibration,
            case_subjects(CASES, REPLIES),
            catalogue=TENANT.catalogue_text(),
            batch=batch,
        )
    )
    serve(demo_script())
    assert verdicts(rows) == verdicts(in_batches(remembered()[1]))  # the same answers, the same samples
    assert sorted(ids) == ["calibration", "cases"] and all(i.startswith("msgbatch_") for i in ids.values())
    user = server.requests[0]["messages"][0]
    assert [block.get("cache_control") for block in user["content"]] == [BREAKPOINT, BREAKPOINT, None]
    assert sum(r.cached_tokens for r in rows) > 0  # the later requests read the marked prefixes
    litellm = _litellm()
    one = next(r for r in rows if r.cached_tokens)
    usage = litellm.Usage(
        prompt_tokens=one.prompt_tokens,
        completion_tokens=one.completion_tokens,
        prompt_tokens_details={"cached_tokens": one.cached_tokens},
        cache_read_input_tokens=one.cached_tokens,
    )
    assert one.cost_usd == pytest.approx(sum(batch_cost_calculator(usage, "anthropic/claude-sonnet-4-5")))
    assert one.cost_known


def test_a_look_at_the_batch_that_meets_a_server_error_is_tried_again_at_the_next_poll(serve) -> None:
    from kindgi_eval.llm import Gateway

    server = serve(demo_script(), looks_before_done=1)
    server.failed_looks = 2  # a gateway restarting while the batch is out: the batch is paid for, and must not be lost
    gateway = LitellmJudge(JUDGE, gateway=Gateway(server.base_url.removesuffix("/v1"), None), prepared=False)
    rows = asyncio.run(
        judge_suite_in_batches(
            gateway,
            SUITE.calibration,
            case_subjects(CASES, REPLIES),
            catalogue=TENANT.catalogue_text(),
            batch=remembered()[1],
        )
    )
    assert server.failed_looks == 0 and {r.vote for r in rows} >= {"pass", "fail"}
    assert not any(r.invalid_reason and "batch" in r.invalid_reason for r in rows)

"""The paid stages given what a killed attempt recorded ("done") and where to record what they ask ("record")."""

from __future__ import annotations

import asyncio
import json

from kindgi_eval.agents.factory import make_agent
from kindgi_eval.inputs import RunSettings, load_checked_suite, load_tenant
from kindgi_eval.kinds import cases_of, models_of
from kindgi_eval.rules import Completion, Usage
from kindgi_eval.steps import (
    ask_agent,
    outcome_rows,
    sample_judge,
    sample_key,
    suite_rows,
)
from kindgi_eval_tests.conftest import GOLDEN
from kindgi_eval_tests.fake_provider import fenced


class Counting:
    """Wraps an agent and counts what it was asked; or, as a judge, agrees with every hand label and passes the rest."""

    def __init__(self, inner=None, labels: dict[str, str] | None = None) -> None:
        self.inner = inner
        self.labels = labels or {}
        self.name = getattr(inner, "name", "counting:judge")
        self.asked: list[str] = []

    async def answer(self, turn):
        self.asked.append(turn.case_id)
        return await self.inner.answer(turn)

    async def grade(self, messages, *, timeout_s, schema=None):
        reply = fenced({"messages": messages}, "reply")
        self.asked.append(reply)
        await asyncio.sleep(0)
        if self.labels.get(reply) == "fail":
            return Completion(
                json.dumps({"verdict": "fail", "evidence": reply, "reason": "labelled fail"}), Usage(), 1.0
            )
        return Completion(json.dumps({"verdict": "pass", "evidence": "", "reason": "ok"}), Usage(), 1.0)


def golden():
    loaded = load_tenant(None)
    parsed = load_checked_suite(GOLDEN, loaded, models_of=models_of)
    return loaded, parsed, suite_rows(parsed, loaded.tenant.tenant, loaded.hash)


def test_the_agent_is_asked_only_the_cases_not_recorded_and_rows_keep_their_order() -> None:
    loaded, _, suite = golden()
    agent = make_agent(RunSettings(agent_model="mock:agent"), loaded.tenant)
    whole = ask_agent(agent, suite, concurrency=4, deadline_ms=15_000)
    done = whole[3:9]  # a killed attempt recorded these
    counting, recorded = Counting(agent), []
    rows = ask_agent(counting, suite, concurrency=4, deadline_ms=15_000, done=done, record=recorded.append)
    assert [r.case_id for r in rows] == [r.case_id for r in whole]  # the order an unbroken run has
    assert rows[3:9] == done  # the recorded rows are the rows, untouched
    # nothing recorded is asked again; a scenario is asked once a turn
    assert sorted(counting.asked) == sorted(r.case_id for r in whole[:3] + whole[9:] for _ in r.turns or [r])
    assert sorted(r.case_id for r in recorded) == sorted(
        counting.asked
    )  # everything asked is recorded, a scenario turn by turn


def test_the_judge_draws_only_the_samples_not_recorded_and_rows_keep_their_order() -> None:
    loaded, parsed, suite = golden()
    replies = ask_agent(
        make_agent(RunSettings(agent_model="mock:agent"), loaded.tenant), suite, concurrency=4, deadline_ms=15_000
    )
    outcomes = outcome_rows(cases_of(suite), replies, 15_000)
    kwargs = dict(catalogue=loaded.tenant.catalogue_text(), concurrency=4, timeout_s=5)
    labels = {" ".join(item.reply): item.label for item in parsed.calibration}
    first = Counting(labels=labels)
    whole = sample_judge(first, suite, replies, outcomes, parsed.calibration, **kwargs)
    assert any(s.subject == "case" for s in whole)  # a group calibrated, so cases were sampled too
    done = whole[::3][:40]  # a killed attempt recorded some calibration and some case samples
    again, recorded = Counting(labels=labels), []
    rows = sample_judge(
        again, suite, replies, outcomes, parsed.calibration, done=done, record=recorded.append, **kwargs
    )
    assert [sample_key(s) for s in rows] == [sample_key(s) for s in whole]
    assert len(again.asked) == len(whole) - len(done) == len(recorded)
    assert {sample_key(s) for s in recorded}.isdisjoint({sample_key(s) for s in done})


class PairJudge:
    """A pairwise judge preferring the reply shown first that says "$450", counting the orders it was shown."""

    name = "counting:pairwise"

    def __init__(self) -> None:
        self.asked = 0

    async def grade(self, messages, *, timeout_s, schema=None):
        self.asked += 1
        await asyncio.sleep(0)
        text = messages[-1]["content"]
        first = text.index("$450") < text.index("Hello") if "$450" in text and "Hello" in text else True
        return Completion(json.dumps({"winner": "A" if first else "B", "reason": "the price"}), Usage(), 1.0)


def test_the_pairwise_judge_compares_only_the_pairs_not_recorded_and_rows_keep_their_order() -> None:
    from kindgi_eval.kinds import judge_pairwise, pair_key
    from kindgi_eval.rules import PairwiseCalibration, PairwiseCase
    from kindgi_eval.store import StatusRow

    def case(prompt: str, variant: str) -> PairwiseCase:
        return PairwiseCase(id=f"{prompt}/{variant}", text=f"{prompt}?", prompt_id=prompt, variant=variant)

    cases = [case(f"p{n}", v) for n in range(6) for v in ("A", "B")]
    statuses = [
        StatusRow(
            case_id=c.id,
            status="passed",
            failures=[],
            messages=["$450 it is." if c.variant == "A" else "Hello there."],
            escalate=False,
            reason=None,
            latency_ms=1.0,
            error=None,
            review=[],
            criteria=[],
        )
        for c in cases
    ]
    better, worse = ("$450.",), ("Hello.",)
    calibration = [
        PairwiseCalibration(
            id=f"cal-{n}",
            text="price?",
            reply_a=better if n % 2 else worse,
            reply_b=worse if n % 2 else better,
            label="A" if n % 2 else "B",
        )
        for n in range(4)
    ]  # both labels, as calibration needs
    kwargs = dict(catalogue="", concurrency=4, timeout_s=5)
    first = PairJudge()
    whole = judge_pairwise(first, cases, statuses, calibration, **kwargs)
    assert [r.subject for r in whole] == ["calibration"] * 4 + ["prompt"] * 6 and first.asked == 2 * 10
    done = whole[1:3] + whole[5:8]  # a killed attempt recorded two labelled pairs and three prompts
    again, recorded = PairJudge(), []
    rows = judge_pairwise(again, cases, statuses, calibration, done=done, record=recorded.append, **kwargs)
    assert [pair_key(r) for r in rows] == [pair_key(r) for r in whole]  # the order an unbroken run has
    assert [rows[1], rows[2], rows[5], rows[6], rows[7]] == done  # the recorded rows are the rows, untouched
    assert again.asked == 2 * (10 - len(done)) and len(recorded) == 10 - len(
        done
    )  # both orders of each pair not recorded
    assert {pair_key(r) for r in recorded}.isdisjoint({pair_key(r) for r in done})

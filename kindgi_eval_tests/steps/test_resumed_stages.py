"""The paid stages given what a killed attempt recorded ("done") and where to record what they ask ("record")."""

from __future__ import annotations

import asyncio
import json

from kindgi_eval.agents.factory import make_agent
from kindgi_eval.inputs import RunSettings, load_checked_suite, load_tenant
from kindgi_eval.spec import Completion, Usage
from kindgi_eval.steps import (
    ask_agent,
    cases_of,
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

    async def grade(self, messages, *, timeout_s):
        reply = fenced({"messages": messages}, "reply")
        self.asked.append(reply)
        await asyncio.sleep(0)
        if self.labels.get(reply) == "fail":
            return Completion(json.dumps({"verdict": "fail", "evidence": reply, "reason": "labelled fail"}), Usage(), 1.0)
        return Completion(json.dumps({"verdict": "pass", "evidence": "", "reason": "ok"}), Usage(), 1.0)


def golden():
    loaded = load_tenant(None)
    parsed = load_checked_suite(GOLDEN, loaded)
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
    assert sorted(counting.asked) == sorted(r.case_id for r in whole[:3] + whole[9:])  # nothing recorded is asked again
    assert sorted(r.case_id for r in recorded) == sorted(counting.asked)  # everything asked is recorded


def test_the_judge_draws_only_the_samples_not_recorded_and_rows_keep_their_order() -> None:
    loaded, parsed, suite = golden()
    replies = ask_agent(make_agent(RunSettings(agent_model="mock:agent"), loaded.tenant), suite, concurrency=4, deadline_ms=15_000)
    outcomes = outcome_rows(cases_of(suite), replies, 15_000)
    kwargs = dict(catalogue=loaded.tenant.catalogue_text(), concurrency=4, timeout_s=5)
    labels = {" ".join(item.reply): item.label for item in parsed.calibration}
    first = Counting(labels=labels)
    whole = sample_judge(first, suite, replies, outcomes, parsed.calibration, **kwargs)
    assert any(s.subject == "case" for s in whole)  # a group calibrated, so cases were sampled too
    done = whole[::3][:40]  # a killed attempt recorded some calibration and some case samples
    again, recorded = Counting(labels=labels), []
    rows = sample_judge(again, suite, replies, outcomes, parsed.calibration, done=done, record=recorded.append, **kwargs)
    assert [sample_key(s) for s in rows] == [sample_key(s) for s in whole]
    assert len(again.asked) == len(whole) - len(done) == len(recorded)
    assert {sample_key(s) for s in recorded}.isdisjoint({sample_key(s) for s in done})

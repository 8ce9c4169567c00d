"""A kind's own check of every reply: the `outcomes` stage places what it adds after each case's assertions, and the
custom kind's check is its handler, run through the sandbox the stage opens for it, never for a reply that never came."""

from __future__ import annotations

import json
from contextlib import contextmanager

import pytest

from kindgi_eval.inputs import RunSettings
from kindgi_eval.kinds import RepliesGiven, kind_named
from kindgi_eval.rules import HANDLER_CHECK, HANDLER_ERROR, Case, Handler, HandlerExit
from kindgi_eval.steps import outcome_rows
from kindgi_eval.store import OutcomeRow, ReplyRow, SuiteRow

HANDLER = Handler(
    modulePath="h.py",
    entrypointPath="grade",
    source="def grade(case, reply):\n    return {'pass': True, 'reason': 'ok'}\n",
)
from kindgi_eval_tests.rows import reply_row

CASES = [Case(id=f"c{n}", text="hi", expect={"escalate": False}) for n in range(3)]


def reply(case_id: str, error: str | None = None) -> ReplyRow:
    return reply_row(case_id, ["hi there"], error)


def suite_row(kind: str, row_id: str, body: str, suite_kind: str) -> SuiteRow:
    return SuiteRow(
        kind=kind,
        id=row_id,
        line=1,
        text="",
        nudge=False,
        funnel_stage=None,
        course=None,
        review=[],
        body=body,
        tenant="demo-academy",
        eval_dir="x",
        suite_hash="a" * 64,
        config_hash="b" * 64,
        suite_kind=suite_kind,
    )


def stored(suite_kind: str, handler: Handler | None) -> list[SuiteRow]:
    rows = [suite_row("case", c.id, c.model_dump_json(), suite_kind) for c in CASES]
    return rows + ([suite_row("handler", handler.name, handler.model_dump_json(), suite_kind)] if handler else [])


def added(case_id: str) -> OutcomeRow:
    return OutcomeRow(case_id=case_id, assertion=HANDLER_CHECK, held=True, detail="added by the kind")


@pytest.mark.parametrize(
    ("given", "after"),
    [
        (None, {}),  # a kind without a check of its own adds nothing
        ({}, {}),
        ({"c1": [added("c1")]}, {"c1": [HANDLER_CHECK]}),
        (
            {"c0": [added("c0"), added("c0")], "c2": [added("c2")]},
            {"c0": [HANDLER_CHECK, HANDLER_CHECK], "c2": [HANDLER_CHECK]},
        ),
        ({"nobody": [added("nobody")]}, {}),  # an outcome of a case the suite does not hold is not a row
    ],
)
def test_what_a_kind_adds_follows_each_case_s_own_assertions(given, after) -> None:
    replies = [reply(c.id) for c in CASES]
    plain = outcome_rows(CASES, replies, 15_000)
    rows = outcome_rows(CASES, replies, 15_000, given)
    for case in CASES:
        own = [r.assertion for r in plain if r.case_id == case.id]
        assert [r.assertion for r in rows if r.case_id == case.id] == own + after.get(case.id, [])
    assert [r.case_id for r in rows] == sorted(r.case_id for r in rows)  # each case's rows together, in suite order


class Sandbox:
    """Stands in for the sandbox the `outcomes` stage opens: answers each call with `answer`, counting its calls."""

    def __init__(self, answer: bytes) -> None:
        self.answer, self.calls, self.opened, self.closed = answer, [], 0, 0

    @contextmanager
    def open(self):
        self.opened += 1
        try:
            yield self
        finally:
            self.closed += 1

    def run(self, handler: Handler, payload: dict) -> HandlerExit:
        self.calls.append(payload["case"]["id"])
        return HandlerExit(0, self.answer, b"", 3.0)


@pytest.mark.parametrize(
    ("answer", "assertion", "held"),
    [
        (json.dumps({"pass": True, "reason": "ok"}).encode(), HANDLER_CHECK, True),
        (json.dumps({"pass": False, "reason": "rude"}).encode(), HANDLER_CHECK, False),
        (b"not json", HANDLER_ERROR, False),  # no valid verdict is an error, never a pass
    ],
)
def test_the_custom_kind_s_check_is_its_handler_in_the_sandbox_the_stage_opens(answer, assertion, held) -> None:
    sandbox = Sandbox(answer)
    replies = [reply("c0"), reply("c1", error="timeout"), reply("c2")]
    check = kind_named("custom").checking.replies
    checked = check(RepliesGiven(stored("custom", HANDLER), CASES, replies, RunSettings(), sandbox.open))
    assert sandbox.calls == ["c0", "c2"] and sandbox.opened == sandbox.closed == 1  # no reply, no call
    assert sorted(checked.outcomes) == ["c0", "c2"]  # the agent's error already fails c1
    for case_id in ("c0", "c2"):
        (row,) = checked.outcomes[case_id]
        assert (row.case_id, row.assertion, row.held) == (case_id, assertion, held)
        assert row.handler is not None and row.handler.duration_ms == 3.0
    assert checked.about == {"handler": HANDLER.name, "handler_errors": 2 if assertion == HANDLER_ERROR else 0}


def test_a_stored_suite_without_a_handler_opens_no_sandbox() -> None:
    sandbox = Sandbox(b"")
    check = kind_named("custom").checking.replies
    checked = check(
        RepliesGiven(stored("custom", None), CASES, [reply(c.id) for c in CASES], RunSettings(), sandbox.open)
    )
    assert (checked.outcomes, checked.about, sandbox.opened) == ({}, {}, 0)

"""A custom suite's handler time is bounded per run as well as per call: once the run's budget is spent, no call is
started, and every case left is an error that says so, never a pass (docs/design.md#fail-closed)."""

from __future__ import annotations

import json

from kindgi_eval.kinds import grade_replies
from kindgi_eval.rules import Case, Handler, HandlerExit
from kindgi_eval.store import ReplyRow

HANDLER = Handler(
    modulePath="h.py",
    entrypointPath="grade",
    source="def grade(case, reply):\n    return {'pass': True, 'reason': 'ok'}\n",
)
from kindgi_eval_tests.rows import reply_row


def reply(case_id: str) -> ReplyRow:
    return reply_row(case_id)


def test_once_the_run_s_handler_time_is_spent_the_cases_left_are_errors_not_passes() -> None:
    cases = [Case(id=f"c{n}", text="hi", expect={"escalate": False}) for n in range(5)]
    now = [0.0]
    calls = []

    def run(handler: Handler, payload: dict) -> HandlerExit:  # each call takes 40 s of the clock
        calls.append(payload["case"]["id"])
        now[0] += 40
        return HandlerExit(0, json.dumps({"pass": True, "reason": "ok"}).encode(), b"", 40_000.0)

    verdicts = grade_replies(
        run, HANDLER, cases, [reply(c.id) for c in cases], concurrency=1, budget_s=100, clock=lambda: now[0]
    )
    assert calls == ["c0", "c1", "c2"]  # started at 0, 40 and 80 s; at 120 s the 100 s are spent
    assert [verdicts[c.id].verdict for c in cases] == ["pass", "pass", "pass", "error", "error"]
    assert verdicts["c4"].error == (
        "not run: the handler's 100 s for the whole run (EVAL_HANDLER_RUN_S) were spent on the "
        "cases before this one; ungraded"
    )

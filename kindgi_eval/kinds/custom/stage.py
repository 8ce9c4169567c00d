"""A custom suite's handler: run on every reply (in the `outcomes` stage, since its verdict is each case's check),
and the `custom` stage's table of what it made of each.

The handler is called through `run`, the sandbox's entry (`agents.Sandbox.run`), which starts a process per reply;
this module only decides what it is asked and reads what it did (`spec.judge_exit`), so a test can hand it any
runner. A handler that fails is an `error` verdict and the stage goes on to the next reply.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, NamedTuple

from kindgi_eval.kinds.custom.check import handler_hash
from kindgi_eval.kinds.custom.folder import HANDLER_ROW
from kindgi_eval.kinds.figures import count
from kindgi_eval.kinds.kind import RepliesGiven, ReplyChecks
from kindgi_eval.rules import (
    HANDLER_CHECK,
    HANDLER_ERROR,
    Case,
    Handler,
    HandlerExit,
    HandlerVerdict,
    check_handler,
    judge_exit,
    out_of_time,
    skipped,
)
from kindgi_eval.store import HandlerRow, MetricRow, OutcomeRow, ReplyRow, StatusRow, SuiteRow


class CustomRow(HandlerRow):
    """One case of a custom suite: its handler's verdict beside the case's status."""

    case_id: str
    """The case."""
    handler_name: str
    """The handler, as `module:entrypoint`."""
    status: str
    """The case's status, from its assertions (the handler's among them) and the judge."""


Run = Callable[[Handler, dict[str, Any]], HandlerExit]
"""Runs a handler on one `{"case", "reply"}` payload in the sandbox."""


class CustomSummary(NamedTuple):
    """How the handler's verdicts fell, over a run's cases."""

    passed: int
    failed: int
    errors: int
    skipped: int


def handler_of(rows: Sequence[SuiteRow]) -> Handler | None:
    """The handler of a stored custom suite (its `handler` row); None for another kind."""
    found = next((r for r in rows if r.kind == HANDLER_ROW), None)
    return Handler.model_validate_json(found.body) if found else None


def payload(case: Case, reply: ReplyRow) -> dict[str, Any]:
    """What the handler is given for one reply: the case as published, and the agent's reply."""
    return {
        "case": case.model_dump(mode="json"),
        "reply": {"messages": list(reply.messages), "escalate": reply.escalate, "reason": reply.reason},
    }


def grade_replies(
    run: Run,
    handler: Handler,
    cases: Sequence[Case],
    replies: Sequence[ReplyRow],
    *,
    concurrency: int,
    budget_s: float,
    clock: Callable[[], float] = time.monotonic,
) -> dict[str, HandlerVerdict]:
    """The handler's verdict on every case's reply, `concurrency` sandboxes at a time; a case whose agent failed is
    skipped, not graded. Once `budget_s` of the run's time in the handler has passed, no call is started: each case
    left is an error (`out_of_time`), never a pass."""
    by_case = {r.case_id: r for r in replies}
    ends = clock() + budget_s

    def grade(case: Case) -> HandlerVerdict:
        reply = by_case[case.id]
        if reply.error is not None or reply.escalate is None:
            return skipped(reply.error)
        if clock() >= ends:
            return out_of_time(budget_s)
        return judge_exit(run(handler, payload(case, reply)))

    with ThreadPoolExecutor(max_workers=max(1, concurrency), thread_name_prefix="handler") as pool:
        verdicts = list(pool.map(grade, cases))
    return {case.id: verdict for case, verdict in zip(cases, verdicts, strict=True)}


def handler_outcomes(given: RepliesGiven) -> ReplyChecks:
    """A custom suite's handler on every reply, each call in its own sandbox, as one more outcome of each case it was
    run on (`custom_handler`, or `handler_error` when it gave no valid verdict, never a pass); nothing for another
    kind. Its metadata names the handler and counts its errors."""
    handler = handler_of(given.suite)
    if handler is None:
        return ReplyChecks({})
    workers = min(
        given.settings.concurrency, os.cpu_count() or 1
    )  # each sandbox may take a core for its whole time limit
    with given.sandbox() as sandbox:  # the run's group over its calls, removed after them
        handled = grade_replies(
            sandbox.run, handler, given.cases, given.replies, concurrency=workers, budget_s=given.settings.handler_run_s
        )
    outcomes = {}
    for case_id, verdict in handled.items():
        checked = check_handler(verdict)
        if checked is not None:
            outcomes[case_id] = [
                OutcomeRow(case_id=case_id, **checked.model_dump(), handler=HandlerRow(**verdict._asdict()))
            ]
    errors = sum(v.verdict == "error" for v in handled.values())
    return ReplyChecks(outcomes, {"handler": handler.name, "handler_errors": errors})


def custom_rows(
    handler: Handler, cases: Sequence[Case], outcomes: Sequence[OutcomeRow], statuses: Sequence[StatusRow]
) -> list[CustomRow]:
    """One row per case of a custom suite, in suite order: the handler's verdict as `outcomes` recorded it, beside the
    case's status. A case without a handler outcome was skipped (its agent gave no reply)."""
    recorded = {
        o.case_id: o.handler
        for o in outcomes
        if o.assertion in (HANDLER_CHECK, HANDLER_ERROR) and o.handler is not None
    }
    status_of = {s.case_id: s for s in statuses}
    rows = []
    for case in cases:
        status = status_of[case.id]
        found = recorded.get(case.id)
        verdict = found.model_dump() if found else skipped(status.error)._asdict()
        rows.append(CustomRow(case_id=case.id, handler_name=handler.name, status=status.status, **verdict))
    return rows


def summarize_custom(rows: Sequence[CustomRow]) -> CustomSummary:
    """How many cases the handler passed, failed, gave no valid verdict on, and was not run on."""
    count = {v: sum(r.verdict == v for r in rows) for v in ("pass", "fail", "error", "skipped")}
    return CustomSummary(count["pass"], count["fail"], count["error"], count["skipped"])


def custom_metrics(rows: Sequence[CustomRow]) -> list[MetricRow]:
    """A custom suite's figures: how its handler's verdicts fell."""
    summary = summarize_custom(rows)
    return [
        count("handler_passed", summary.passed),
        count("handler_failed", summary.failed),
        count("handler_errors", summary.errors),
        count("handler_skipped", summary.skipped),
    ]


def custom_params(suite: Sequence[SuiteRow]) -> dict[str, str | None]:
    """A custom suite's parameters: its handler as `module:entrypoint` and the hash of its published source."""
    handler = handler_of(suite)
    return {} if handler is None else {"handler_name": handler.name, "handler_hash": handler_hash(handler)}

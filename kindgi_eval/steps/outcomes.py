"""The `outcomes` stage: every deterministic assertion of every case, from the stored replies."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kindgi_eval.kinds import Assertions
from kindgi_eval.rules import AgentReply, Case, Scenario, check_case, check_scenario
from kindgi_eval.store import OutcomeRow, ReplyRow


def reply_of(row: ReplyRow) -> AgentReply | None:
    """The stored reply, or None when the agent failed."""
    if row.error is not None or row.escalate is None:
        return None
    return AgentReply(messages=tuple(row.messages), escalate=row.escalate, reason=row.reason)


def outcome_rows(
    cases: Sequence[Case],
    replies: Sequence[ReplyRow],
    max_latency_ms: float,
    added: Mapping[str, Sequence[OutcomeRow]] | None = None,
    *,
    assertions: Assertions = check_case,
    scenarios: Sequence[Scenario] = (),
) -> list[OutcomeRow]:
    """Every deterministic assertion of every case, one row each, as its kind's `assertions` hold it
    (docs/design.md#assertions for a conversation case, an accuracy item's grader), then the outcomes its kind's own
    check of every reply gave it (`added`, by case id: a custom suite's handler's verdict). Then every assertion of
    every scenario over its played turns, each detail naming its turn."""
    by_case = {r.case_id: r for r in replies}
    rows = []
    for case in cases:
        reply = by_case[case.id]
        results = assertions(
            case, reply_of(reply), error=reply.error, latency_ms=reply.latency_ms, max_latency_ms=max_latency_ms
        )
        rows += [OutcomeRow(case_id=case.id, **r.model_dump()) for r in results]
        rows += added.get(case.id, ()) if added is not None else ()
    for scenario in scenarios:
        reply = by_case[scenario.id]
        failed = reply.error if reply.ended == "contact_error" else None
        results = check_scenario(scenario, reply.turns or (), max_latency_ms=max_latency_ms, contact_error=failed)
        rows += [OutcomeRow(case_id=scenario.id, **r.model_dump()) for r in results]
    return rows

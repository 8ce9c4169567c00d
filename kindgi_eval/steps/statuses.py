"""The `statuses` stage: one status per case and per scenario, from its assertions and the calibrated judge's verdicts."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from kindgi_eval.rules import Case, Criterion, Majority, Scenario, case_status, decide, evidence_turn
from kindgi_eval.store import CalibrationRow, CriterionRow, OutcomeRow, ReplyRow, SampleRow, StatusRow

SampleKey = tuple[str, str, str, int | None]
"""A criterion's samples of one subject: its id, the criterion's source and text, and the turn graded."""


def status_rows(
    cases: Sequence[Case],
    replies: Sequence[ReplyRow],
    outcomes: Sequence[OutcomeRow],
    samples: Sequence[SampleRow],
    calibration: Sequence[CalibrationRow],
    *,
    judged: bool,
    scenarios: Sequence[Scenario] = (),
) -> list[StatusRow]:
    """One status per case, then per scenario: assertions first, then the calibrated judge's verdicts
    (docs/design.md#statuses). A scenario is one row, its transcript within: an asserted failure on any of its turns
    makes it `failed`."""
    reply_by_case = {r.case_id: r for r in replies}
    failed_by_case: dict[str, list[str]] = defaultdict(list)
    for o in outcomes:
        if not o.held:
            failed_by_case[o.case_id].append(o.detail)
    samples_by_key: dict[SampleKey, list[SampleRow]] = defaultdict(list)
    for s in samples:
        if s.subject == "case":
            samples_by_key[(s.subject_id, s.source, s.criterion, s.turn)].append(s)
    calibrated = {c.group for c in calibration if c.calibrated}

    def status_of(item: Case | Scenario, criteria: list[Criterion]) -> StatusRow:
        reply = reply_by_case[item.id]
        failures = failed_by_case[item.id]
        held = not failures
        if not judged:
            verdicts = [_unjudged(c) for c in criteria if c.source == "review"]
        elif held:
            verdicts = [
                _verdict(c, samples_by_key[(item.id, c.source, c.criterion, c.turn)], c.group in calibrated)
                for c in criteria
            ]
        else:  # an asserted failure never reaches the judge
            verdicts = []
        if reply.turns is not None:  # a review entry's evidence is one turn's words: say which
            verdicts = [
                v if v.turn is not None else v.model_copy(update={"turn": evidence_turn(v.evidence, reply.turns)})
                for v in verdicts
            ]
        status = case_status(
            assertions_held=held,
            has_review=item.needs_a_verdict(),
            verdicts=[(c.source, c.verdict) for c in verdicts],
        )
        return StatusRow(
            case_id=item.id,
            status=status,
            failures=failures,
            messages=reply.messages,
            escalate=reply.escalate,
            reason=reply.reason,
            latency_ms=reply.latency_ms,
            error=reply.error,
            review=list(item.review_criteria),
            criteria=verdicts,
            turns=reply.turns,
        )

    rows = [status_of(case, case.criteria()) for case in cases]
    return rows + [status_of(s, s.criteria(reply_by_case[s.id].turns or ())) for s in scenarios]


def _unjudged(c: Criterion) -> CriterionRow:
    return CriterionRow(
        source=c.source,
        criterion=c.criterion,
        group=c.group,
        verdict="ungraded",
        split=False,
        votes=[],
        evidence="",
        reason="",
        turn=c.turn,
    )


def _verdict(c: Criterion, samples: Sequence[SampleRow], is_calibrated: bool) -> CriterionRow:
    """The majority of a criterion's samples; a group that failed calibration grades nothing this run."""
    votes, decided = decide([(s.sample, s.vote) for s in samples])
    if not is_calibrated:
        decided = Majority("ungraded", False)
    verdict = decided.verdict
    agreeing = next((s for s in samples if s.vote == verdict), None)
    return CriterionRow(
        source=c.source,
        criterion=c.criterion,
        group=c.group,
        verdict=verdict,
        split=decided.split,
        votes=list(votes),
        evidence=agreeing.evidence if agreeing else "",
        reason=agreeing.reason if agreeing else "",
        turn=c.turn,
    )

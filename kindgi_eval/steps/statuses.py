"""The `statuses` stage: one status per case, from its assertions and the calibrated judge's verdicts."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from kindgi_eval.rules import Case, Criterion, Majority, case_status, decide
from kindgi_eval.store import CalibrationRow, CriterionRow, OutcomeRow, ReplyRow, SampleRow, StatusRow


def status_rows(
    cases: Sequence[Case],
    replies: Sequence[ReplyRow],
    outcomes: Sequence[OutcomeRow],
    samples: Sequence[SampleRow],
    calibration: Sequence[CalibrationRow],
    *,
    judged: bool,
) -> list[StatusRow]:
    """One status per case: assertions first, then the calibrated judge's verdicts (spec 016's table)."""
    reply_by_case = {r.case_id: r for r in replies}
    failed_by_case: dict[str, list[str]] = defaultdict(list)
    for o in outcomes:
        if not o.held:
            failed_by_case[o.case_id].append(o.detail)
    samples_by_key: dict[tuple[str, str, str], list[SampleRow]] = defaultdict(list)
    for s in samples:
        if s.subject == "case":
            samples_by_key[(s.subject_id, s.source, s.criterion)].append(s)
    calibrated = {c.group for c in calibration if c.calibrated}
    rows = []
    for case in cases:
        reply = reply_by_case[case.id]
        failures = failed_by_case[case.id]
        held = not failures
        if not judged:
            criteria = [_unjudged(c) for c in case.criteria() if c.source == "review"]
        elif held:
            criteria = [
                _verdict(c, samples_by_key[(case.id, c.source, c.criterion)], c.group in calibrated)
                for c in case.criteria()
            ]
        else:  # an asserted failure never reaches the judge
            criteria = []
        status = case_status(
            assertions_held=held,
            has_review=case.needs_a_verdict(),
            verdicts=[(c.source, c.verdict) for c in criteria],
        )
        rows.append(
            StatusRow(
                case_id=case.id,
                status=status,
                failures=failures,
                messages=reply.messages,
                escalate=reply.escalate,
                reason=reply.reason,
                latency_ms=reply.latency_ms,
                error=reply.error,
                review=list(case.review_criteria),
                criteria=criteria,
            )
        )
    return rows


def _unjudged(c: Criterion) -> CriterionRow:
    return CriterionRow(
        source=c.source, criterion=c.criterion, group=c.group, verdict="ungraded", split=False, votes=[], evidence="", reason=""
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
    )

"""What each stage of the chain computes, as plain functions of rows: the assets only wire these together."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence

from kindgi_eval.agent import AgentReply, AgentTurn
from kindgi_eval.checks import check_case
from kindgi_eval.criteria import Criterion, criteria_for
from kindgi_eval.rows import (
    CalibrationRow,
    CriterionRow,
    OutcomeRow,
    ReplyRow,
    RunRow,
    SampleRow,
    StatusRow,
    SuiteRow,
)
from kindgi_eval.schemas import Case
from kindgi_eval.statuses import STATUSES, case_status
from kindgi_eval.suite_files import Suite
from kindgi_eval.verdicts import SAMPLES, Majority, majority


def suite_rows(suite: Suite, tenant: str, config_hash: str) -> list[SuiteRow]:
    """The parsed suite as rows, each item kept as canonical JSON so later stages rebuild it exactly."""
    common = dict(tenant=tenant, eval_dir=suite.eval_dir, suite_hash=suite.hash, config_hash=config_hash)
    rows = [
        SuiteRow(
            kind="case",
            id=case.id,
            line=line,
            text=case.text,
            nudge=case.nudge,
            funnel_stage=case.entry_stage,
            course=case.contact.course if case.contact else None,
            review=list(case.review_criteria),
            body=case.model_dump_json(),
            **common,
        )
        for case, line in zip(suite.cases, suite.case_lines, strict=True)
    ]
    rows += [
        SuiteRow(
            kind="calibration",
            id=item.id,
            line=0,
            text=item.text,
            nudge=False,
            funnel_stage=None,
            course=None,
            review=[item.criterion],
            body=item.model_dump_json(),
            **common,
        )
        for item in suite.calibration
    ]
    return rows


def cases_of(rows: Sequence[SuiteRow]) -> list[Case]:
    """The cases of a stored suite, in file order."""
    return [Case.model_validate_json(r.body) for r in rows if r.kind == "case"]


def turn_of(case: Case, tenant: str) -> AgentTurn:
    """What the agent is given for a case; a nudge carries no contact text."""
    return AgentTurn(
        tenant=tenant,
        case_id=case.id,
        text="" if case.nudge else case.text,
        history=case.history,
        contact=case.contact,
        nudge=case.nudge,
    )


def reply_of(row: ReplyRow) -> AgentReply | None:
    """The stored reply, or None when the agent failed."""
    if row.error is not None or row.escalate is None:
        return None
    return AgentReply(messages=tuple(row.messages), escalate=row.escalate, reason=row.reason)


def outcome_rows(cases: Sequence[Case], replies: Sequence[ReplyRow], max_latency_ms: float) -> list[OutcomeRow]:
    """Every deterministic assertion of every case (spec 009), one row each."""
    by_case = {r.case_id: r for r in replies}
    rows = []
    for case in cases:
        reply = by_case[case.id]
        results = check_case(
            case, reply_of(reply), error=reply.error, latency_ms=reply.latency_ms, max_latency_ms=max_latency_ms
        )
        rows += [OutcomeRow(case_id=case.id, **r.model_dump()) for r in results]
    return rows


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
            criteria = [_unjudged(c) for c in criteria_for(case) if c.source == "review"]
        elif held:
            criteria = [
                _verdict(c, samples_by_key[(case.id, c.source, c.criterion)], c.group in calibrated)
                for c in criteria_for(case)
            ]
        else:  # an asserted failure never reaches the judge
            criteria = []
        status = case_status(
            assertions_held=held,
            has_review=bool(case.review_criteria),
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


def decide(samples: Sequence[SampleRow]) -> tuple[list[str], Majority]:
    """The votes of one criterion's samples in sample order, and their majority; fewer than SAMPLES is ungraded."""
    votes = [s.vote for s in sorted(samples, key=lambda s: s.sample)]
    return votes, majority(votes) if len(votes) == SAMPLES else Majority("ungraded", False)


def _verdict(c: Criterion, samples: Sequence[SampleRow], is_calibrated: bool) -> CriterionRow:
    """The majority of a criterion's samples; a group that failed calibration grades nothing this run."""
    votes, decided = decide(samples)
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


def run_row(
    suite: Sequence[SuiteRow],
    replies: Sequence[ReplyRow],
    samples: Sequence[SampleRow],
    statuses: Sequence[StatusRow],
    *,
    stages: Sequence[str],
    judge: str | None,
    judge_prompt_hash: str | None,
    code_version: str,
    replies_from: str,
    started_at: str,
    finished_at: str,
) -> RunRow:
    """The run in one row: lineage, counts per status, ungraded criteria, costs and funnel coverage."""
    first = suite[0]
    counts = Counter(s.status for s in statuses)
    entered = {r.funnel_stage for r in suite if r.kind == "case"}
    return RunRow(
        tenant=first.tenant,
        eval_dir=first.eval_dir,
        suite_hash=first.suite_hash,
        config_hash=first.config_hash,
        agent=replies[0].agent if replies else "",
        judge=judge,
        judge_prompt_hash=judge_prompt_hash,
        code_version=code_version,
        replies_from=replies_from,
        started_at=started_at,
        finished_at=finished_at,
        cases=len(statuses),
        ungraded=sum(c.verdict == "ungraded" for s in statuses for c in s.criteria) if judge else 0,
        agent_usd=sum(r.cost_usd for r in replies),
        judge_usd=sum(s.cost_usd for s in samples),
        cost_unknown=not all(r.cost_known for r in replies) or not all(s.cost_known for s in samples),
        stages=list(stages),
        uncovered=[s for s in stages if s not in entered],
        **{status.replace("-", "_"): counts.get(status, 0) for status in STATUSES},
    )

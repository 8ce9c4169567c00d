"""What a run prints and what `--json` writes, from the stored rows of that run."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pydantic import BaseModel

from kindgi_eval.kinds import KindResult, KindRows, kind_named
from kindgi_eval.reports.judged import (
    group_rates,
    judge_error_text,
    labels_advice,
    pass_rate_corrected,
    rate_json,
    summary_rate_lines,
)
from kindgi_eval.reports.reading import NUDGE_NOTE, shown_history, shown_message, turn_failures
from kindgi_eval.rules import (
    FAILING,
    STATUSES,
    THRESHOLD,
    Case,
    Scenario,
    clip,
    counted,
    invalid_cause,
    judge_was_down,
    safe,
)
from kindgi_eval.store import CalibrationRow, CriterionRow, MetricRow, ReplyRow, RunRow, SampleRow, StatusRow, TurnRow

RECAP_AFTER = 10
"""A run of more cases than this ends with the list of its failing cases, so nobody scrolls back for them."""


def render(
    result: KindResult,
    statuses: Sequence[StatusRow],
    calibration: Sequence[CalibrationRow],
    key: str,
    cases: Sequence[Case | Scenario],
    marks: Mapping[str, str],
    metrics: Sequence[MetricRow] = (),
) -> str:
    """The printed report: every case's conversation and reply, review criteria beneath it, every failure, then the
    summary; a scenario as its transcript, each turn's failures and verdicts beneath it. `marks` holds the line a
    kind adds to a case (see `case_marks`); `metrics` are the run's `run_metrics` rows, whose judged rates the summary
    shows."""
    run = result.run
    judged = run.judge is not None
    by_id = {c.id: c for c in cases}
    against = kind_named(run.suite_kind).report.against(result)
    lines = [
        f"Suite {run.eval_dir} ({key}, hash {run.suite_hash[:12]}): {run.cases} cases against {against}, "
        + (f"judged by {run.judge}" if judged else "no judge"),
        "",
    ]
    for s in statuses:
        lines += _case_lines(s, judged, by_id.get(s.case_id), marks.get(s.case_id))
    lines.append("")
    lines += summary_lines(result, calibration, metrics)
    lines += recap_lines(statuses)
    return "\n".join(lines) + "\n"


def conversation_lines(case: Case | Scenario) -> list[str]:
    """What the agent was answering: the last earlier turns and the contact's message, each clipped to one line (a
    scenario's opening turns only: its turns follow)."""
    earlier = shown_history(case)
    out = (
        [f"  ({len(case.history) - len(earlier)} earlier turns not shown)"] if len(case.history) > len(earlier) else []
    )
    out += [f"  (earlier) {'contact' if role == 'user' else 'agent'}: {safe(text)}" for role, text in earlier]
    if isinstance(case, Scenario):
        return out
    message = shown_message(case)
    out.append(f"  {NUDGE_NOTE}" if message is None else f"  contact: {safe(message)}")
    return out


def _message_lines(messages: Sequence[str], indent: str = "  ") -> list[str]:
    out = []
    for number, message in enumerate(messages, start=1):
        first, *rest = safe(message).split("\n")
        out.append(f"{indent}{number}| {first}")
        out += [f"{indent} | {line}" for line in rest]
    return out


def _judged_fail_lines(c: CriterionRow, indent: str = "  ") -> list[str]:
    split = " (split 2-1)" if c.split else ""
    return [
        f"{indent}JUDGED-FAIL {safe(c.criterion)}{split}: {safe(c.reason)}",
        f'{indent}  evidence: "{safe(c.evidence)}"',
    ]


def _turn_lines(s: StatusRow) -> list[str]:
    """A scenario's transcript: each turn's contact message (and who wrote it, when a contact model did), the agent's
    messages, and beneath them that turn's failures and judged-fail verdicts."""
    failures = turn_failures(s.failures)
    out = []
    for t in s.turns or ():
        by = "" if t.contact_by == "script" else f" ({safe(t.contact_by)})"
        out.append(f"  turn {t.turn} contact{by}: {safe(t.contact_text)}")
        out += _message_lines(t.messages, "    ")
        if t.escalate:
            out.append(f"    (escalated: {safe(t.reason or 'no reason given')})")
        out += [f"    FAILED: {safe(f)}" for f in failures.get(t.turn, ())]
        for c in s.criteria:
            if c.turn == t.turn and c.source == "rubric" and c.verdict == "fail":
                out += _judged_fail_lines(c, "    ")
    return out


def _case_lines(s: StatusRow, judged: bool, case: Case | Scenario | None, mark: str | None) -> list[str]:
    head = f"[{s.status}] {s.case_id}"
    if s.escalate:
        head += f" (escalated: {safe(s.reason or 'no reason given')})"
    out = [head]
    if mark:
        out.append(f"  {safe(mark)}")
    if case is not None:
        out += conversation_lines(case)
    out += _message_lines(s.messages) if s.turns is None else _turn_lines(s)
    if s.error:
        out.append(f"  error: {safe(s.error)}")
    verdicts = {c.criterion: c for c in s.criteria if c.source == "review"}
    for entry in s.review:
        verdict = verdicts.get(entry)
        mark = f" [{verdict.verdict}{', split' if verdict.split else ''}]" if judged and verdict else ""
        out.append(f"  review{mark}: {safe(entry)}")
    turned = turn_failures(s.failures) if s.turns is not None else {}
    out += [f"  FAILED: {safe(f)}" for f in s.failures if not any(f in shown for shown in turned.values())]
    for c in s.criteria:
        if c.verdict == "fail" and (s.turns is None or c.source == "review"):
            out += _judged_fail_lines(c)
            if s.turns is not None and c.turn is not None:
                out[-1] += f" (turn {c.turn})"
    return out


def summary_lines(
    result: KindResult, calibration: Sequence[CalibrationRow], metrics: Sequence[MetricRow] = ()
) -> list[str]:
    """Counts (three without a judge, five with one: docs/design.md#statuses), the kind's lines, calibration with the
    judge's error and how many labels would halve each group's corrected interval, the judged rates, cost, coverage."""
    run = result.run
    if run.judge is None:
        counts = f"{run.passed} passed, {run.failed} failed, {run.reviewed} reviewed"
    else:
        counts = ", ".join(f"{getattr(run, s.replace('-', '_'))} {s}" for s in STATUSES)
        counts += f"; {run.ungraded} criteria ungraded"
    lines = [f"Summary: {counts}", *kind_lines(result)]
    if run.judge is not None and judge_was_down(calibration):
        drawn = sum(c.samples for c in calibration)
        causes = counted([cause for c in calibration for cause in c.invalid_causes])
        lines.append(
            f"Judge {run.judge} was down for the whole run: {drawn} of {drawn} samples invalid ({causes}); "
            "nothing was graded, so this run is not a judged one."
        )
    if run.judge is not None and calibration:
        lines.append(f"Calibration (threshold {THRESHOLD:g}):")
        for c in calibration:
            agreement = "n/a" if c.agreement is None else f"{c.agreement:.2f}"
            low = "" if c.agreement_low is None else f" (95% lower bound {c.agreement_low:.2f})"
            kappa = "n/a" if c.kappa is None else f"{c.kappa:.2f}"
            state = "calibrated" if c.calibrated else "not calibrated"
            advice = labels_advice(c, metrics)
            lines.append(
                f"  {c.group}: agreement {agreement}{low}, kappa {kappa}, {c.items} items "
                f"({c.pass_labels} pass, {c.fail_labels} fail); {state}: {c.note}"
                + (f" The judge's {judge_error_text(c)}." if c.items else "")
                + (f" {advice}" if advice else "")
            )
        lines += summary_rate_lines(metrics)
    cost = f"Cost: agent ${run.agent_usd:.4f}"
    if run.judge is not None:
        cost += f", judge ${run.judge_usd:.4f}"
    if run.contact_usd:
        cost += f", contact model ${run.contact_usd:.4f}"
    if run.cost_unknown:
        cost += " (a model's price is unknown: counted as 0)"
    lines.append(cost)
    if kind_named(run.suite_kind).report.enters_funnel:
        uncovered = ", ".join(run.uncovered) if run.uncovered else "none"
        lines.append(f"Funnel coverage: {len(run.stages)} stages ({', '.join(run.stages)}); uncovered: {uncovered}")
    return lines + meaning_lines(run)


ERROR_SHOWN = 300
"""The most characters of a provider error the summary quotes."""


def first_error_lines(replies: Sequence[ReplyRow], samples: Sequence[SampleRow]) -> list[str]:
    """The first error of each kind the agent's calls and the judge's met, in its own words, with how many calls met
    that kind: a judge answering 404 to every call is named, not only counted."""
    met: dict[tuple[str, str], list[str]] = {}
    for who, errors in (
        ("agent", [r.error for r in replies if r.error]),
        (
            "judge",
            [
                s.invalid_reason.removeprefix("error: ")
                for s in samples
                if s.invalid_reason and s.invalid_reason.startswith("error: ")
            ],
        ),
    ):
        for error in errors:
            met.setdefault((who, invalid_cause(f"error: {error}")), []).append(error)
    return [
        f"First {who} error ({kind}, {len(errors)} call{'s' if len(errors) > 1 else ''}): {safe(clip(errors[0], ERROR_SHOWN))}"
        for (who, kind), errors in met.items()
    ]


def meaning_lines(run: RunRow) -> list[str]:
    """What `reviewed` and `ungraded` mean and what to do about them, once, when the run has any."""
    lines = []
    if run.reviewed:
        lines.append(
            "reviewed: every assertion held, but the case needs a verdict no calibrated judge gave (a review entry, "
            "a judge-graded item, a pairwise prompt). Read those replies yourself, or run with a --judge-model that "
            "calibrates on the suite's labelled items (mock:demo-judge shows how, offline)."
        )
    if run.judge is not None and run.ungraded:
        lines.append(
            "ungraded: criteria the judge gave no verdict on (their group is not calibrated, or its samples were "
            "invalid); they count on neither side. The calibration lines above say which groups and why."
        )
    return lines


def recap_lines(statuses: Sequence[StatusRow]) -> list[str]:
    """The failing cases of a long run once more, beneath its summary."""
    failing = [s for s in statuses if s.status in FAILING]
    if len(statuses) <= RECAP_AFTER or not failing:
        return []
    return [f"Failing cases ({len(failing)}):", *(f"  [{s.status}] {s.case_id}" for s in failing)]


def case_marks(suite_kind: str, own: Sequence[BaseModel]) -> dict[str, str]:
    """The line a kind adds under a case's head (an accuracy item's grade, a regression case's move, a custom
    handler's verdict), as the run's kind marks the rows of its own stage."""
    return dict(kind_named(suite_kind).report.marks(KindRows(suite=(), replies=(), own=own)))


def kind_lines(result: KindResult) -> list[str]:
    """What the run's kind reports beneath the counts: its accuracy, its regression, its pairwise result, …"""
    return kind_named(result.run.suite_kind).report.lines(result)


def turn_json(t: TurnRow) -> dict:
    """A scenario's turn as the `--json` summary lists it."""
    return {
        "turn": t.turn,
        "contact_by": t.contact_by,
        "contact_text": t.contact_text,
        "messages": t.messages,
        "escalate": t.escalate,
        "reason": t.reason,
    }


def summary_json(
    run_id: str,
    result: KindResult,
    statuses: Sequence[StatusRow],
    calibration: Sequence[CalibrationRow],
    metrics: Sequence[MetricRow] = (),
) -> dict:
    """The `--json` summary, and the key of the run's kind; a judged run's calibration groups carry the
    judge's sensitivity and specificity with their counts, and the group's judged-fail rate, observed and corrected."""
    run = result.run
    by_group = {c.group: c for c in calibration}
    rates = {r.group: r for r in group_rates(metrics)}
    passes = pass_rate_corrected(metrics)
    return {
        "run_id": run_id,
        "suite": {"eval_dir": run.eval_dir, "hash": run.suite_hash},
        "agent_model": run.agent,
        "judge_model": run.judge,
        "counts": {s: getattr(run, s.replace("-", "_")) for s in STATUSES},
        "ungraded": run.ungraded,
        "calibration": {
            g: {
                "agreement": c.agreement,
                "agreement_low": c.agreement_low,
                "kappa": c.kappa,
                "items": c.items,
                "labels": {"pass": c.pass_labels, "fail": c.fail_labels},
                "calibrated": c.calibrated,
                "note": c.note,
                "sensitivity": c.sensitivity,
                "caught": c.caught,
                "fails_graded": c.fails_graded,
                "specificity": c.specificity,
                "cleared": c.cleared,
                "passes_graded": c.passes_graded,
                "judged_fail_rate": rate_json(rates.get(g)),
                "labels_to_halve": labels_advice(c, metrics),
            }
            for g in kind_named(run.suite_kind).checking.groups
            if (c := by_group.get(g))
        },
        "cost": {"agent_usd": run.agent_usd, "judge_usd": run.judge_usd, "contact_usd": run.contact_usd or 0.0},
        **(
            {}
            if passes is None
            else {
                "pass_rate": {
                    "passed": passes.count,
                    "cases": passes.out_of,
                    "corrected": passes.value,
                    "low": passes.low,
                    "high": passes.high,
                    "method": passes.method,
                    "note": passes.note,
                }
            }
        ),
        "coverage": {"stages": run.stages, "uncovered": run.uncovered},
        **kind_named(run.suite_kind).report.summary(result),
        "cases": [
            {
                "id": s.case_id,
                "status": s.status,
                "failures": s.failures,
                "messages": s.messages,
                "escalate": s.escalate,
                "reason": s.reason,
                "latency_ms": s.latency_ms,
                # source, criterion, group, verdict, split, votes, evidence, reason (and a scenario's turn)
                "criteria": [c.model_dump(exclude=set() if s.turns is not None else {"turn"}) for c in s.criteria],
                **({"turns": [turn_json(t) for t in s.turns]} if s.turns is not None else {}),
            }
            for s in statuses
        ],
    }

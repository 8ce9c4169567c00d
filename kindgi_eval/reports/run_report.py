"""What a run prints and what `--json` writes, from the stored rows of that run."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kindgi_eval.reports.reading import NUDGE_NOTE, TURN_CHARS, shown_history, shown_message
from kindgi_eval.spec import FAILING, STATUSES, THRESHOLD, Case, clip, counted, groups_of, judge_was_down, safe
from kindgi_eval.store import AccuracyRow, CalibrationRow, CustomRow, RegressionRow, RunRow, StatusRow


NO_FUNNEL = ("accuracy", "pairwise")
"""Kinds whose items are not conversations entering the tenant's funnel: their coverage would read like a failure."""


RECAP_AFTER = 10
"""A run of more cases than this ends with the list of its failing cases, so nobody scrolls back for them."""


def render(
    run: RunRow,
    statuses: Sequence[StatusRow],
    calibration: Sequence[CalibrationRow],
    key: str,
    cases: Sequence[Case],
    marks: Mapping[str, str],
) -> str:
    """The printed report: every case's conversation and reply, review criteria beneath it, every failure, then the
    summary. `marks` holds the line a kind adds to a case (see `case_marks`)."""
    judged = run.judge is not None
    by_id = {c.id: c for c in cases}
    against = f"variant A ({run.variant_a}) and variant B ({run.variant_b})" if run.suite_kind == "pairwise" else run.agent
    lines = [
        f"Suite {run.eval_dir} ({key}, hash {run.suite_hash[:12]}): {run.cases} cases against {against}, "
        + (f"judged by {run.judge}" if judged else "no judge"),
        "",
    ]
    for s in statuses:
        lines += _case_lines(s, judged, by_id.get(s.case_id), marks.get(s.case_id))
    lines.append("")
    lines += summary_lines(run, calibration)
    lines += recap_lines(statuses)
    return "\n".join(lines) + "\n"


def conversation_lines(case: Case) -> list[str]:
    """What the agent was answering: the last earlier turns and the contact's message, each clipped to one line."""
    earlier = shown_history(case)
    out = [f"  ({len(case.history) - len(earlier)} earlier turns not shown)"] if len(case.history) > len(earlier) else []
    out += [f"  (earlier) {'contact' if role == 'user' else 'agent'}: {safe(text)}" for role, text in earlier]
    message = shown_message(case)
    out.append(f"  {NUDGE_NOTE}" if message is None else f"  contact: {safe(message)}")
    return out


def _case_lines(s: StatusRow, judged: bool, case: Case | None, mark: str | None) -> list[str]:
    head = f"[{s.status}] {s.case_id}"
    if s.escalate:
        head += f" (escalated: {safe(s.reason or 'no reason given')})"
    out = [head]
    if mark:
        out.append(f"  {safe(mark)}")
    if case is not None:
        out += conversation_lines(case)
    for number, message in enumerate(s.messages, start=1):
        first, *rest = safe(message).split("\n")
        out.append(f"  {number}| {first}")
        out += [f"   | {line}" for line in rest]
    if s.error:
        out.append(f"  error: {safe(s.error)}")
    verdicts = {c.criterion: c for c in s.criteria if c.source == "review"}
    for entry in s.review:
        verdict = verdicts.get(entry)
        mark = f" [{verdict.verdict}{', split' if verdict.split else ''}]" if judged and verdict else ""
        out.append(f"  review{mark}: {safe(entry)}")
    out += [f"  FAILED: {safe(f)}" for f in s.failures]
    for c in s.criteria:
        if c.verdict == "fail":
            split = " (split 2-1)" if c.split else ""
            out.append(f"  JUDGED-FAIL {safe(c.criterion)}{split}: {safe(c.reason)}")
            out.append(f'    evidence: "{safe(c.evidence)}"')
    return out


def summary_lines(run: RunRow, calibration: Sequence[CalibrationRow]) -> list[str]:
    """Counts (spec 009's three without a judge, spec 016's five with one), calibration, cost, coverage."""
    if run.judge is None:
        counts = f"{run.passed} passed, {run.failed} failed, {run.reviewed} reviewed"
    else:
        counts = ", ".join(f"{getattr(run, s.replace('-', '_'))} {s}" for s in STATUSES)
        counts += f"; {run.ungraded} criteria ungraded"
    lines = [f"Summary: {counts}", *kind_lines(run)]
    if run.judge is not None and judge_was_down(calibration):
        drawn = sum(c.samples for c in calibration)
        causes = counted([cause for c in calibration for cause in c.invalid_causes])
        lines.append(f"Judge {run.judge} was down for the whole run: {drawn} of {drawn} samples invalid ({causes}); "
                     "nothing was graded, so this run is not a judged one.")
    if run.judge is not None and calibration:
        lines.append(f"Calibration (threshold {THRESHOLD:g}):")
        for c in calibration:
            agreement = "n/a" if c.agreement is None else f"{c.agreement:.2f}"
            low = "" if c.agreement_low is None else f" (95% lower bound {c.agreement_low:.2f})"
            kappa = "n/a" if c.kappa is None else f"{c.kappa:.2f}"
            state = "calibrated" if c.calibrated else "not calibrated"
            lines.append(
                f"  {c.group}: agreement {agreement}{low}, kappa {kappa}, {c.items} items "
                f"({c.pass_labels} pass, {c.fail_labels} fail); {state}: {c.note}"
            )
    cost = f"Cost: agent ${run.agent_usd:.4f}"
    if run.judge is not None:
        cost += f", judge ${run.judge_usd:.4f}"
    if run.cost_unknown:
        cost += " (a model's price is unknown: counted as 0)"
    lines.append(cost)
    if run.suite_kind not in NO_FUNNEL:
        uncovered = ", ".join(run.uncovered) if run.uncovered else "none"
        lines.append(f"Funnel coverage: {len(run.stages)} stages ({', '.join(run.stages)}); uncovered: {uncovered}")
    return lines + meaning_lines(run)


def meaning_lines(run: RunRow) -> list[str]:
    """What `reviewed` and `ungraded` mean and what to do about them, once, when the run has any."""
    lines = []
    if run.reviewed:
        lines.append("reviewed: every assertion held, but the case needs a verdict no calibrated judge gave (a review entry, "
                     "a judge-graded item, a pairwise prompt). Read those replies yourself, or run with a --judge-model that "
                     "calibrates on the suite's labelled items (mock:demo-judge shows how, offline).")
    if run.judge is not None and run.ungraded:
        lines.append("ungraded: criteria the judge gave no verdict on (their group is not calibrated, or its samples were "
                     "invalid); they count on neither side. The calibration lines above say which groups and why.")
    return lines


def recap_lines(statuses: Sequence[StatusRow]) -> list[str]:
    """The failing cases of a long run once more, beneath its summary."""
    failing = [s for s in statuses if s.status in FAILING]
    if len(statuses) <= RECAP_AFTER or not failing:
        return []
    return [f"Failing cases ({len(failing)}):", *(f"  [{s.status}] {s.case_id}" for s in failing)]


def case_marks(accuracy: Sequence[AccuracyRow], regressions: Sequence[RegressionRow], custom: Sequence[CustomRow]) -> dict[str, str]:
    """The line a kind adds under a case's head: an accuracy item's grade and why (when not correct), a regression
    case's move against its baseline (when it moved), a custom handler's verdict with its score and reason."""
    marks = {a.case_id: f"{a.grade} ({a.grader}): {a.detail}" for a in accuracy if a.grade != "correct"}
    marks.update((c.case_id, _handler_mark(c)) for c in custom)
    marks.update(
        (r.case_id, f"{r.change}: {r.baseline_status} in baseline run {r.baseline_run[:8]}, {r.status} now")
        for r in regressions
        if r.change != "unchanged"
    )
    return marks


def _handler_mark(row: CustomRow) -> str:
    score = "" if row.score is None else f", score {row.score:g}"
    why = row.reason if row.error is None else row.error
    return f"handler {row.handler_name}: {row.verdict}{score}" + (f": {clip(why, TURN_CHARS)}" if why else "")


def kind_lines(run: RunRow) -> list[str]:
    """What a suite of a kind with a number reports, beneath the counts: its accuracy, its regression, its benchmark,
    its pairwise result, its review queue."""
    if run.suite_kind == "accuracy":
        graded = (run.correct or 0) + (run.wrong or 0)
        if run.accuracy is None:
            figure = "n/a (no item was graded)"
        else:
            figure = f"{run.accuracy:.3f}, {run.correct} of {graded} graded items correct (95% Wilson interval {run.accuracy_low:.3f} to {run.accuracy_high:.3f})"
        return [f"Accuracy: {figure}; {run.ungraded_items} ungraded, counted on neither side"]
    if run.suite_kind == "regression":
        moved = f"{run.improved} improved, {run.regressed} regressed, {run.unchanged} unchanged"
        change = ""
        if run.pass_rate_change is not None:
            change = (f"; pass rate {run.pass_rate_change:+.3f} (paired 95% interval {run.change_low:+.3f} to {run.change_high:+.3f}, "
                      f"McNemar exact p = {run.mcnemar_p:.3g})")
        return [f"Regression against run {run.baseline_run}: {moved}{change}"]
    if run.suite_kind == "benchmark":
        return [f"Benchmark: {run.benchmark_name} {run.benchmark_version} (content sha256 {run.benchmark_hash})"]
    if run.suite_kind == "human-review":
        skipped = f"; {run.review_skipped} cases without a reply left out" if run.review_skipped else ""
        each = f", {(run.review_items or 0) // run.review_replies} rubric items each" if run.review_replies else ""
        queued = f"Human review: {run.review_items} items queued for the {run.reviewer_role} ({run.review_replies} replies{each}){skipped}"
        return [f"{queued}; kindgi-eval review export <run id> writes the file to label"]
    if run.suite_kind == "pairwise":
        if not run.pairwise_calibrated:
            return [f"Pairwise {run.variant_a} (A) against {run.variant_b} (B): not judged, the judge is not calibrated on the labelled pairs"]
        if run.win_rate is None:
            return [f"Pairwise {run.variant_a} (A) against {run.variant_b} (B): no prompt was answered by both"]
        return [f"Pairwise {run.variant_a} (A) against {run.variant_b} (B): {run.wins} wins, {run.losses} losses, {run.ties} ties; "
                f"win rate {run.win_rate:.3f} (bootstrap 95% interval {run.win_rate_low:.3f} to {run.win_rate_high:.3f}); "
                f"position consistency {run.position_consistency:.2f}"]
    if run.suite_kind == "custom":
        return [f"Custom handler {run.handler_name} (source sha256 {(run.handler_hash or '')[:12]}): {run.handler_passed} passed, "
                f"{run.handler_failed} failed, {run.handler_errors} errors (no valid verdict, never a pass), "
                f"{run.handler_skipped} skipped (no reply)"]
    return []


def kind_json(run: RunRow) -> dict:
    """The `--json` key of a suite of a kind with a result of its own: `accuracy`, `regression`, `benchmark`,
    `human_review`, `pairwise` or `custom`."""
    if run.suite_kind == "accuracy":
        interval = None if run.accuracy is None else {"low": run.accuracy_low, "high": run.accuracy_high, "method": "wilson", "level": 0.95}
        return {"accuracy": {"value": run.accuracy, "correct": run.correct, "wrong": run.wrong, "ungraded": run.ungraded_items, "interval": interval}}
    if run.suite_kind == "regression":
        interval = None if run.pass_rate_change is None else {"low": run.change_low, "high": run.change_high, "method": "paired bootstrap", "level": 0.95}
        return {"regression": {"baseline_run": run.baseline_run, "improved": run.improved, "regressed": run.regressed,
                               "unchanged": run.unchanged, "pass_rate_change": run.pass_rate_change, "interval": interval,
                               "mcnemar_p": run.mcnemar_p}}
    if run.suite_kind == "benchmark":
        return {"benchmark": {"name": run.benchmark_name, "version": run.benchmark_version, "hash": run.benchmark_hash}}
    if run.suite_kind == "human-review":
        return {"human_review": {"reviewer_role": run.reviewer_role, "queue": run.review_items, "replies": run.review_replies,
                                 "skipped": run.review_skipped}}
    if run.suite_kind == "pairwise":
        interval = None if run.win_rate is None else {"low": run.win_rate_low, "high": run.win_rate_high, "method": "bootstrap", "level": 0.95}
        return {"pairwise": {"variant_a": run.variant_a, "variant_b": run.variant_b, "calibrated": run.pairwise_calibrated,
                             "agreement": run.pairwise_agreement, "wins": run.wins, "losses": run.losses, "ties": run.ties,
                             "win_rate": run.win_rate, "interval": interval, "position_consistency": run.position_consistency}}
    if run.suite_kind == "custom":
        return {"custom": {"handler": run.handler_name, "hash": run.handler_hash, "passed": run.handler_passed,
                           "failed": run.handler_failed, "errors": run.handler_errors, "skipped": run.handler_skipped}}
    return {}


def summary_json(
    run_id: str, run: RunRow, statuses: Sequence[StatusRow], calibration: Sequence[CalibrationRow]
) -> dict:
    """The `--json` document of DESIGN.md."""
    by_group = {c.group: c for c in calibration}
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
            }
            for g in groups_of(run.suite_kind)
            if (c := by_group.get(g))
        },
        "cost": {"agent_usd": run.agent_usd, "judge_usd": run.judge_usd},
        "coverage": {"stages": run.stages, "uncovered": run.uncovered},
        **kind_json(run),
        "cases": [
            {
                "id": s.case_id,
                "status": s.status,
                "failures": s.failures,
                "messages": s.messages,
                "escalate": s.escalate,
                "reason": s.reason,
                "latency_ms": s.latency_ms,
                "criteria": [c.model_dump() for c in s.criteria],  # source, criterion, group, verdict, split, votes, evidence, reason
            }
            for s in statuses
        ],
    }

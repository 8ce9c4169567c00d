"""A judged run's rates as every view words them (the printed summary, `--json`, the HTML report, the Dagster UI,
`diff`): per calibration group the observed judged-fail rate, the rate corrected for the judge's measured error with
its 95% interval, and how many more labels would halve that interval; the corrected pass rate. Pure: rows in, text
and plain values out."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from kindgi_eval.rules import labels_to_halve
from kindgi_eval.steps import JUDGED_FAIL_RATE, JUDGED_FAIL_RATE_CORRECTED, PASS_RATE_CORRECTED
from kindgi_eval.store import CalibrationRow, MetricRow


class GroupRate(NamedTuple):
    """One calibration group's judged-fail rate: observed, and corrected."""

    group: str
    observed: MetricRow
    corrected: MetricRow


def group_rates(metrics: Sequence[MetricRow]) -> list[GroupRate]:
    """Each group's rates, all its criteria together, in the order the run stored them."""
    observed = {m.group: m for m in metrics if m.name == JUDGED_FAIL_RATE and m.criterion is None}
    return [
        GroupRate(m.group, observed[m.group], m)
        for m in metrics
        if m.name == JUDGED_FAIL_RATE_CORRECTED and m.criterion is None and m.group in observed
    ]


def pass_rate_corrected(metrics: Sequence[MetricRow]) -> MetricRow | None:
    """The run's corrected pass rate; None for a run without a judge (or stored before it was measured)."""
    return next((m for m in metrics if m.name == PASS_RATE_CORRECTED), None)


def figure(value: float | None) -> str:
    """A rate to two places, or n/a."""
    return "n/a" if value is None else f"{value:.2f}"


def interval(row: MetricRow) -> str:
    """A figure with its interval: `0.03 (95% interval 0.00 to 0.41)`, or the note saying why there is none."""
    if row.value is None or row.low is None or row.high is None:
        return f"none: {row.note}"
    return f"{row.value:.2f} (95% interval {row.low:.2f} to {row.high:.2f})"


def rate_line(rate: GroupRate) -> str:
    """One group's judged-fail rate in a line: how many graded replies failed, the observed rate, the corrected one."""
    observed = rate.observed
    if not observed.out_of:
        return f"{rate.group}: nothing graded"
    return (
        f"{rate.group}: {observed.count} of {observed.out_of} graded replies failed ({figure(observed.value)}); "
        f"corrected {interval(rate.corrected)}"
    )


def pass_rate_line(row: MetricRow) -> str:
    """The run's pass rate, observed and corrected."""
    observed = row.count / row.out_of if row.count is not None and row.out_of else None
    return f"Pass rate: {figure(observed)} ({row.count} of {row.out_of} cases); corrected {interval(row)}"


def summary_rate_lines(metrics: Sequence[MetricRow]) -> list[str]:
    """The printed summary's lines of a judged run's rates: one per group, then the pass rate; none without a judge."""
    rates = group_rates(metrics)
    passes = pass_rate_corrected(metrics)
    lines = []
    if rates:
        lines.append("Judged-fail rates, observed and corrected for the judge's measured error:")
        lines += [f"  {rate_line(rate)}" for rate in rates]
    if passes is not None:
        lines.append(pass_rate_line(passes))
    return lines


def labels_advice(calibration: CalibrationRow, metrics: Sequence[MetricRow]) -> str | None:
    """How many more labelled items, and of which label, would halve the group's corrected interval at today's rates;
    None where the group has no corrected interval (nothing graded, no correction)."""
    corrected = next((r.corrected for r in group_rates(metrics) if r.group == calibration.group), None)
    if corrected is None or corrected.count is None or not corrected.out_of or corrected.low is None:
        return None
    advice = labels_to_halve(corrected.count, corrected.out_of, calibration.judge_error)
    return None if advice is None else advice.note


def judge_error_text(c: CalibrationRow) -> str:
    """The judge's sensitivity and specificity against the group's labels, with their counts."""
    return (
        f"sensitivity {figure(c.sensitivity)} ({c.caught} of {c.fails_graded} fail labels), "
        f"specificity {figure(c.specificity)} ({c.cleared} of {c.passes_graded} pass labels)"
    )


def rate_json(rate: GroupRate | None) -> dict | None:
    """A group's rates as the `--json` summary gives them."""
    if rate is None:
        return None
    return {
        "failed": rate.observed.count,
        "graded": rate.observed.out_of,
        "observed": rate.observed.value,
        "corrected": rate.corrected.value,
        "low": rate.corrected.low,
        "high": rate.corrected.high,
        "method": rate.corrected.method,
        "note": rate.corrected.note,
    }

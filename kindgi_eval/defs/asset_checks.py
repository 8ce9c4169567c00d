"""Asset checks the Dagster UI shows beside each run: one per calibration group, and one on the statuses."""

from __future__ import annotations

import warnings

import dagster as dg

from kindgi_eval.defs.assets import SUITES, calibration, statuses
from kindgi_eval.spec import FAILING, GROUPS
from kindgi_eval.store import CalibrationRow, StatusRow

SHOWN_CASES = 20
"""How many failing case ids a check's metadata lists; the statuses table has them all."""


def group_result(rows: list[CalibrationRow], group: str) -> dg.AssetCheckResult:
    """Passes when `group` may grade (or the run has no judge); warns when it was refused or downgraded."""
    if not rows:
        return dg.AssetCheckResult(passed=True, description="No judge in this run, so there is nothing to calibrate.")
    row = next((r for r in rows if r.group == group), None)
    if row is None:
        return dg.AssetCheckResult(
            passed=False, severity=dg.AssetCheckSeverity.WARN, description=f"The run recorded no calibration for {group}.",
            metadata={"outcome": "refused"},
        )
    outcome = "calibrated" if row.calibrated else ("downgraded" if row.pass_labels and row.fail_labels else "refused")
    metadata: dict[str, object] = {
        "outcome": outcome,
        "items": int(row.items),
        "pass_labels": int(row.pass_labels),
        "fail_labels": int(row.fail_labels),
        "note": row.note,
    }
    if row.agreement is not None:
        metadata["agreement"] = float(row.agreement)
    return dg.AssetCheckResult(
        passed=row.calibrated,
        severity=dg.AssetCheckSeverity.WARN,
        description=row.note if row.calibrated else f"{group} is {outcome}: its criteria stay ungraded. {row.note}",
        metadata=metadata,
    )


def statuses_result(rows: list[StatusRow]) -> dg.AssetCheckResult:
    """Errors when any case is failed or judged-fail, naming them; passes otherwise."""
    failing = [r for r in rows if r.status in FAILING]
    counts = {status: int(sum(r.status == status for r in rows)) for status in sorted(FAILING)}
    shown = [f"{r.case_id} ({r.status})" for r in failing[:SHOWN_CASES]]
    more = f" and {len(failing) - SHOWN_CASES} more" if len(failing) > SHOWN_CASES else ""
    return dg.AssetCheckResult(
        passed=not failing,
        severity=dg.AssetCheckSeverity.ERROR,
        description=(f"{len(failing)} of {len(rows)} cases failed: {', '.join(shown)}{more}." if failing
                     else f"None of {len(rows)} cases failed."),
        metadata={**counts, "failing_cases": ", ".join(shown) + more},
    )


def _group_check(group: str) -> dg.AssetChecksDefinition:
    @dg.asset_check(
        asset=calibration,
        name=f"{group}_calibrated",
        partitions_def=SUITES,
        description=f"Warns when the judge was refused (too few labels) or downgraded (below the threshold) in the "
        f"{group} group, so that group's criteria went ungraded in this run.",
    )
    def check(calibration: list[CalibrationRow]) -> dg.AssetCheckResult:
        return group_result(calibration, group)

    return check


# A partitioned check is a preview API in Dagster 1.13; without partitions_def a check loads every partition.
with warnings.catch_warnings():
    warnings.simplefilter("ignore", dg.PreviewWarning)
    GROUP_CHECKS = [_group_check(group) for group in GROUPS]

    @dg.asset_check(
        asset=statuses,
        partitions_def=SUITES,
        description="Errors when a case is failed or judged-fail; the statuses asset's tables say why.",
    )
    def no_failing_cases(statuses: list[StatusRow]) -> dg.AssetCheckResult:
        """Errors when a case is failed or judged-fail."""
        return statuses_result(statuses)


CHECKS = [*GROUP_CHECKS, no_failing_cases]

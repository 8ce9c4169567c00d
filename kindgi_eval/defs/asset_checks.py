"""Asset checks the Dagster UI shows beside each run: one per calibration group, and one on the statuses.

Each is a check spec of the asset it checks, and that asset's step yields its result beside the materialisation.
So a partition's check state and its latest materialisation are always the same run's: no launch can materialise
`calibration` or `statuses` without evaluating their checks (the launchpad's "include separately executable
checks" box left unticked would), nor evaluate a check alone against an older materialisation. Every evaluation
carries its partition, so the Checks tab's Partitions view shows each suite's state.
"""

from __future__ import annotations

import warnings

import dagster as dg

from kindgi_eval.rules import ACCURACY_GROUP, FAILING, GROUPS
from kindgi_eval.store import CalibrationRow, StatusRow

SHOWN_CASES = 20
"""How many failing case ids a check's metadata lists; the statuses table has them all."""
NO_FAILING_CASES = "no_failing_cases"
CHECKED_GROUPS = (*GROUPS, ACCURACY_GROUP)
"""Every calibration group of every kind of suite: a conversation suite's four and an accuracy suite's one."""


def group_check_name(group: str) -> str:
    """The check of one calibration group: `<group>_calibrated`."""
    return f"{group}_calibrated"


def check_specs(asset: str, partitions_def: dg.PartitionsDefinition) -> list[dg.AssetCheckSpec]:
    """The checks `asset` declares and yields itself: one per calibration group on `calibration`, one on `statuses`."""
    # A partitioned check is a preview API in Dagster 1.13; without partitions_def an evaluation names no partition.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dg.PreviewWarning)
        if asset == "calibration":
            return [
                dg.AssetCheckSpec(
                    group_check_name(group),
                    asset=asset,
                    partitions_def=partitions_def,
                    description=f"Warns when the judge was refused (too few labels) or downgraded (below the threshold) "
                    f"in the {group} group, so that group's criteria went ungraded in this run.",
                )
                for group in CHECKED_GROUPS
            ]
        if asset == "statuses":
            return [
                dg.AssetCheckSpec(
                    NO_FAILING_CASES,
                    asset=asset,
                    partitions_def=partitions_def,
                    description="Errors when a case is failed or judged-fail; the statuses asset's tables say why.",
                )
            ]
    return []


def calibration_checks(rows: list[CalibrationRow]) -> list[dg.AssetCheckResult]:
    """The result of every calibration group's check, for the rows the calibration asset returns."""
    return [group_result(rows, group) for group in CHECKED_GROUPS]


def group_result(rows: list[CalibrationRow], group: str) -> dg.AssetCheckResult:
    """Passes when `group` may grade (or the run has no judge); warns when it was refused or downgraded."""
    name = group_check_name(group)
    if not rows:
        return dg.AssetCheckResult(
            check_name=name, passed=True, description="No judge in this run, so there is nothing to calibrate."
        )
    row = next((r for r in rows if r.group == group), None)
    if row is None:  # every group of the suite's kind has a row: this one is another kind's
        return dg.AssetCheckResult(
            check_name=name,
            passed=True,
            severity=dg.AssetCheckSeverity.WARN,
            description=f"This kind of suite grades nothing in the {group} group.",
            metadata={"outcome": "not applicable"},
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
        check_name=name,
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
        check_name=NO_FAILING_CASES,
        passed=not failing,
        severity=dg.AssetCheckSeverity.ERROR,
        description=(
            f"{len(failing)} of {len(rows)} cases failed: {', '.join(shown)}{more}."
            if failing
            else f"None of {len(rows)} cases failed."
        ),
        metadata={**counts, "failing_cases": ", ".join(shown) + more},
    )

"""The `regressions` stage: each case of a regression suite beside the same case in its baseline run.

The baseline is named once, by the `suite` stage as the run starts (`resolve_baseline`); this stage reads its
statuses and compares. Passing (passed, judged-pass) is above reviewed, which is above failing (failed,
judged-fail); a case that moved up improved, one that moved down regressed, and any regression fails the run.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Literal

from kindgi_eval.inputs import RegisteredAs, folder_key, registered_name, registry_key
from kindgi_eval.kinds.figures import count, estimate
from kindgi_eval.rules import InputError, PairedChange, Problem, paired_change
from kindgi_eval.store import (
    SHARED,
    MetricRow,
    StatusRow,
    StoredRow,
    StorePath,
    read_rows,
    run_keys,
    run_partition,
)


class RegressionRow(StoredRow):
    """One case of a regression suite beside the same case in the baseline run."""

    case_id: str
    """The case."""
    baseline_run: str
    """The run compared with."""
    baseline_status: str
    """The case's status in the baseline run."""
    status: str
    """Its status in this run."""
    change: Literal["improved", "regressed", "unchanged"]
    """Passing is passed or judged-pass, failing is failed or judged-fail, reviewed lies between: a move up is
    improved, a move down regressed."""


RANK = {"failed": 0, "judged-fail": 0, "reviewed": 1, "passed": 2, "judged-pass": 2}
"""How good a status is, for comparing a case with its baseline."""
PASSING = 2


def resolve_baseline(root: StorePath, tenant: str, registered: RegisteredAs, case_ids: Sequence[str]) -> str:
    """The run a regression suite is compared with, checked to have evaluated exactly its cases; InputError naming
    what is missing. A run of another tenant is not found, as if it did not exist."""
    where = f"suite {registered.suite_id} {registered.suite_version}"
    run_id = registered.param("baseline_run_id")
    if run_id is not None:
        partition = run_partition(root, run_id)
        if partition is None or read_rows(root, SHARED.suite, partition, run_id)[0].tenant != tenant:
            raise InputError(
                [
                    Problem(
                        where,
                        None,
                        "spec.baseline.runId",
                        f"no run {run_id!r} of tenant {tenant!r} in the store at {root}. "
                        "See `kindgi-eval runs` for the stored runs, newest first.",
                    )
                ]
            )
    else:
        run_id, partition = _latest_run_of(root, tenant, registered, where)
    baseline = {s.case_id for s in read_rows(root, SHARED.statuses, partition, run_id)}
    missing = [c for c in case_ids if c not in baseline]
    extra = sorted(baseline - set(case_ids))
    problems = []
    if missing:
        problems.append(
            Problem(
                where,
                None,
                "spec.baseline",
                f"run {run_id} did not evaluate case {', '.join(missing)}; a baseline must have evaluated every case of the suite.",
            )
        )
    if extra:
        problems.append(
            Problem(
                where,
                None,
                "spec.baseline",
                f"run {run_id} evaluated case {', '.join(extra)}, which the suite does not have; a baseline must have evaluated the same cases.",
            )
        )
    if problems:
        raise InputError(problems)
    return run_id


def _latest_run_of(root: StorePath, tenant: str, registered: RegisteredAs, where: str) -> tuple[str, str]:
    suite_id, version = registered.param("baseline_suite_id"), registered.param("baseline_version")
    runs = []
    # its partition, then the one releases before registry partitions stored it under (`<tenant>.<folder name>`);
    # only runs that recorded this very suite id and version count, so no other suite's run is ever taken
    for partition in dict.fromkeys(
        (registry_key(tenant, suite_id or ""), folder_key(tenant, registered_name(tenant, suite_id or "")))
    ):
        for key in run_keys(root, partition):
            (summary,) = read_rows(root, SHARED.run_summary, partition, key.run_id)
            if summary.suite_id == suite_id and summary.suite_version == version:
                runs.append((summary.started_at, key.run_id, partition))
    if not runs:
        raise InputError(
            [
                Problem(
                    where,
                    None,
                    "spec.baseline",
                    f"no run of suite {suite_id} version {version} of tenant {tenant!r} "
                    f"in the store at {root}. Run it first: kindgi-eval run --suite {suite_id}@{version}",
                )
            ]
        )
    _, run_id, partition = max(runs)
    return run_id, partition


def regression_rows(
    baseline_run: str, baseline: Sequence[StatusRow], statuses: Sequence[StatusRow]
) -> list[RegressionRow]:
    """One row per case, in the suite's order: its baseline status, its status now and which way it moved."""
    before = {s.case_id: s.status for s in baseline}
    rows = []
    for now in statuses:
        then = before[now.case_id]
        step = RANK[now.status] - RANK[then]
        change = "improved" if step > 0 else "regressed" if step < 0 else "unchanged"
        rows.append(
            RegressionRow(
                case_id=now.case_id, baseline_run=baseline_run, baseline_status=then, status=now.status, change=change
            )
        )
    return rows


def pass_rate_change(rows: Sequence[RegressionRow]) -> PairedChange | None:
    """How the pass rate moved over the compared cases, with its paired interval; None without cases."""
    if not rows:
        return None
    up = sum(RANK[r.status] == PASSING and RANK[r.baseline_status] != PASSING for r in rows)
    down = sum(RANK[r.baseline_status] == PASSING and RANK[r.status] != PASSING for r in rows)
    return paired_change(up, down, len(rows))


def regression_metrics(rows: Sequence[RegressionRow]) -> list[MetricRow]:
    """A regression suite's figures: how its cases moved, and the pass rate's paired change with its McNemar p-value."""
    moved = Counter(r.change for r in rows)
    change = pass_rate_change(rows)
    return [
        count("improved", moved["improved"]),
        count("regressed", moved["regressed"]),
        count("unchanged", moved["unchanged"]),
        estimate("pass_rate_change", change.change if change else None, "paired bootstrap 95%"),
        MetricRow(name="mcnemar_p", value=change.mcnemar_p if change else None, method="mcnemar exact"),
    ]

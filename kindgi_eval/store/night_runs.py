"""What a night's findings read of the store: each suite's latest run of the night and the last run before it that
succeeded, with their statuses and calibration. Reads the store with DuckDB, over the files of the days the night
needs only (the runs' folders name their suite, day and run, so choosing them reads no file): a night over months
of history reads a few files per suite, not all of them."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import NamedTuple

from kindgi_eval.rules import GroupAgreement, RunFacts
from kindgi_eval.store.layout import (
    DATE_COLUMN,
    PARTITION_COLUMN,
    RUN_COLUMN,
    SHARED,
    RunKey,
    StorePath,
    month_path,
    run_keys,
    table_path,
)
from kindgi_eval.store.views import RUN_ENDS, _quoted, open_database

RUN_COLUMNS = "suite, tenant, run_id, started_at, finished_at, state, error, judge"
"""What is read of each run, in the order `SuiteNight` takes it."""


class SuiteNight(NamedTuple):
    """One suite's night as the store holds it."""

    suite: str
    """The suite partition."""
    tenant: str | None
    """Its tenant, as its runs recorded it; None for a suite with no run."""
    latest: RunFacts | None
    """Its latest run of the night; None when it has none."""
    before: RunFacts | None
    """The last run before that one that succeeded; None when it has none."""


def ended_keys(root: StorePath) -> list[RunKey]:
    """Every run the store keeps as failed or stopped (`store.run_ends`), from its folders' names."""
    found = []
    for path in root.glob(f"{RUN_ENDS}/{PARTITION_COLUMN}=*/{DATE_COLUMN}=*/{RUN_COLUMN}=*/data.parquet"):
        suite, day, run = (part.split("=", 1)[1] for part in path.parent.parts[-3:])
        found.append(RunKey(run, suite, day))
    return found


def needed_days(completed: Sequence[RunKey], ended: Sequence[RunKey], since: str | None, until: str | None) -> set[str]:
    """The days a suite's night is read from: the latest day it ran in [`since`, `until`), and the latest day before
    that on which a run of it succeeded (runs of one day are all read, so the latest of them and the one before it are
    among them)."""
    first, last = (since or "")[:10], (until or "9999")[:10]
    days = sorted({k.day for k in (*completed, *ended) if first <= k.day < last})
    if not days:
        return set()
    earlier = [k.day for k in completed if k.day < days[-1]]
    return {days[-1], *([max(earlier)] if earlier else [])}


def _source(root: StorePath, asset: str, keys: Iterable[RunKey]) -> str | None:
    """A SELECT of the rows `keys` stored in `asset`, from their own files or their compacted months; None for none."""
    files, months = [], {}
    for k in keys:
        path = table_path(root, asset, k.partition, k.day, k.run_id)
        if path.exists():
            files.append(path)
        elif (month := month_path(root, asset, k.day[:7])).exists():
            months.setdefault(month, []).append(k.run_id)
    parts = []
    if files:
        listed = ", ".join(f"'{_quoted(f)}'" for f in files)
        parts.append(
            f"SELECT * FROM read_parquet([{listed}], hive_partitioning = true, hive_types_autocast = false, union_by_name = true)"
        )
    for month, runs in months.items():
        wanted = ", ".join("'" + r.replace("'", "''") + "'" for r in runs)
        parts.append(f"SELECT * FROM read_parquet('{_quoted(month)}', union_by_name = true) WHERE run_id IN ({wanted})")
    return " UNION ALL BY NAME ".join(parts) if parts else None


def night_runs(
    root: StorePath, suites: Sequence[str] | None, since: str | None = None, until: str | None = None
) -> list[SuiteNight]:
    """Each suite's night (`suites`, else every suite with a run), in the order given (else by name): its latest run
    that started in [`since`, `until`) (UTC ISO 8601 text; either may be open) and the last run before it that
    succeeded."""
    completed: dict[str, list[RunKey]] = {}
    for k in run_keys(root):
        completed.setdefault(k.partition, []).append(k)
    ended: dict[str, list[RunKey]] = {}
    for k in ended_keys(root):
        ended.setdefault(k.partition, []).append(k)
    order = list(suites) if suites is not None else sorted({*completed, *ended})
    read = {s: needed_days(completed.get(s, []), ended.get(s, []), since, until) for s in order}
    summaries = _source(
        root, SHARED.run_summary.asset, [k for s in order for k in completed.get(s, []) if k.day in read[s]]
    )
    failures = _source(root, RUN_ENDS, [k for s in order for k in ended.get(s, []) if k.day in read[s]])
    chosen: dict[str, tuple[tuple | None, tuple | None]] = {}
    statuses: dict[str, dict[str, str]] = {}
    groups: dict[str, list[GroupAgreement]] = {}
    con = open_database(root)
    try:
        parts = [
            *(
                [f"SELECT *, 'succeeded' AS state, CAST(NULL AS VARCHAR) AS error FROM ({summaries})"]
                if summaries
                else []
            ),
            *([f"SELECT *, CAST(NULL AS VARCHAR) AS judge FROM ({failures})"] if failures else []),
        ]
        listed = (
            con.execute(
                f"SELECT {RUN_COLUMNS} FROM ({' UNION ALL BY NAME '.join(parts)}) "
                "ORDER BY suite, started_at, finished_at, run_id"
            ).fetchall()
            if parts
            else []
        )
        by_suite: dict[str, list[tuple]] = {}
        for row in listed:
            by_suite.setdefault(row[0], []).append(row)
        for suite, rows in by_suite.items():
            night = [r for r in rows if (since is None or r[3] >= since) and (until is None or r[3] < until)]
            latest = night[-1] if night else None
            earlier = rows[: rows.index(latest)] if latest else []
            chosen[suite] = (latest, next((r for r in reversed(earlier) if r[5] == "succeeded"), None))
        wanted = [
            RunKey(r[2], r[0], "") for pair in chosen.values() for r in pair if r is not None and r[5] == "succeeded"
        ]
        days = {k.run_id: k.day for keys in completed.values() for k in keys}
        wanted = [k._replace(day=days[k.run_id]) for k in wanted]
        cases = _source(root, SHARED.statuses.asset, wanted)
        for run_id, case_id, status in (
            con.execute(f"SELECT run_id, case_id, status FROM ({cases})").fetchall() if cases else []
        ):
            statuses.setdefault(run_id, {})[case_id] = status
        fields = list(GroupAgreement.model_fields)
        calibrated = _source(root, SHARED.calibration.asset, wanted)
        columns = ", ".join(f'"{f}"' for f in fields)
        for row in con.execute(f"SELECT run_id, {columns} FROM ({calibrated})").fetchall() if calibrated else []:
            values = {f: v for f, v in zip(fields, row[1:], strict=True) if v is not None}
            groups.setdefault(row[0], []).append(GroupAgreement(**values))
    finally:
        con.close()

    def facts(row: tuple | None) -> RunFacts | None:
        if row is None:
            return None
        _, _, run_id, started_at, _, state, error, judge = row
        return RunFacts(
            run_id=run_id,
            started_at=started_at,
            state=state,
            error=error,
            judge=judge,
            statuses=statuses.get(run_id, {}),
            groups=groups.get(run_id, []),
        )

    return [
        SuiteNight(s, by_suite[s][-1][1] if s in by_suite else None, *map(facts, chosen.get(s, (None, None))))
        for s in order
    ]

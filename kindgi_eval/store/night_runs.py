"""What a night's findings read of the store: each suite's latest run of the night and the last run before it that
succeeded, with their statuses and calibration. Reads the store through its DuckDB views (`runs`, `statuses`,
`calibration`), three queries whatever the number of suites."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from kindgi_eval.rules import GroupAgreement, RunFacts
from kindgi_eval.store.layout import SHARED, StorePath
from kindgi_eval.store.views import Views, connect

NEWEST_LAST = ("started_at", "finished_at", "run_id")
"""The order of a suite's runs: by start (kept to the second), then finish, then id, as `diff --suite` orders them."""


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


def night_runs(root: StorePath, suites: Sequence[str] | None, since: str | None = None, until: str | None = None) -> list[SuiteNight]:
    """Each suite's night (`suites`, else every suite with a run), in the order given (else by name): its latest run
    that started in [`since`, `until`) (UTC ISO 8601 text; either may be open) and the last run before it that
    succeeded."""
    views = Views(tables=(SHARED.run_summary, SHARED.statuses, SHARED.calibration))
    with connect(root, "runs statuses calibration", views) as con:
        where, params = ("WHERE suite IN (SELECT unnest(?::VARCHAR[]))", [list(suites)]) if suites is not None else ("", [])
        listed = con.execute(
            f"SELECT suite, tenant, run_id, started_at, finished_at, state, error, judge FROM runs {where} "
            f"ORDER BY suite, {', '.join(NEWEST_LAST)}", params).fetchall()
        by_suite: dict[str, list[tuple]] = {}
        for row in listed:
            by_suite.setdefault(row[0], []).append(row)
        chosen: dict[str, tuple[tuple | None, tuple | None]] = {}
        for suite, rows in by_suite.items():
            night = [r for r in rows if (since is None or r[3] >= since) and (until is None or r[3] < until)]
            latest = night[-1] if night else None
            earlier = rows[: rows.index(latest)] if latest else []
            before = next((r for r in reversed(earlier) if r[5] == "succeeded"), None)
            chosen[suite] = (latest, before)
        wanted = [r[2] for pair in chosen.values() for r in pair if r is not None and r[5] == "succeeded"]
        statuses: dict[str, dict[str, str]] = {}
        if wanted:
            for run_id, case_id, status in con.execute(
                    "SELECT run_id, case_id, status FROM statuses WHERE run_id IN (SELECT unnest(?::VARCHAR[]))", [wanted]).fetchall():
                statuses.setdefault(run_id, {})[case_id] = status
        fields = list(GroupAgreement.model_fields)
        groups: dict[str, list[GroupAgreement]] = {}
        if wanted:
            columns = ", ".join(f'"{f}"' for f in fields)
            found = con.execute(f"SELECT run_id, {columns} FROM calibration WHERE run_id IN (SELECT unnest(?::VARCHAR[]))", [wanted])
            for row in found.fetchall():
                values = {f: v for f, v in zip(fields, row[1:], strict=True) if v is not None}
                groups.setdefault(row[0], []).append(GroupAgreement(**values))

    def facts(row: tuple | None) -> RunFacts | None:
        if row is None:
            return None
        _, _, run_id, started_at, _, state, error, judge = row
        return RunFacts(run_id=run_id, started_at=started_at, state=state, error=error, judge=judge,
                        statuses=statuses.get(run_id, {}), groups=groups.get(run_id, []))

    order = list(suites) if suites is not None else sorted(by_suite)
    return [SuiteNight(s, by_suite[s][-1][1] if s in by_suite else None, facts(chosen.get(s, (None, None))[0]),
                       facts(chosen.get(s, (None, None))[1])) for s in order]

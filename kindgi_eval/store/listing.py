"""The stored runs, newest first, as `kindgi-eval runs` lists them and `latest` names the first: read through the
`runs` view (DuckDB over the store's Parquet files)."""

from __future__ import annotations

from typing import NamedTuple

from kindgi_eval.store.layout import StorePath
from kindgi_eval.store.views import Views, connect

RUN_COLUMNS = (
    "run_id",
    "suite",
    "tenant",
    "started_at",
    "state",
    "cases",
    "passed",
    "failed",
    "judged_fail",
    "judged_pass",
    "reviewed",
)
"""What a listing shows of a run: its id, suite partition, tenant, start, how it ended and counts, as the `runs` view
names them."""
NEWEST_FIRST = "started_at DESC, finished_at DESC, run_id DESC"
"""By start time; a tie (start times are kept to the second) goes to the one that finished later, then to the id."""


class Listing(NamedTuple):
    """Stored runs, newest first."""

    columns: tuple[str, ...]
    """`RUN_COLUMNS`, the names of each row's values."""
    rows: list[tuple]
    """One row per run, its values in `columns`' order."""


def newest_runs(
    root: StorePath, views: Views, suite: str | None = None, limit: int | None = None, *, completed: bool = False
) -> Listing:
    """The store's runs (only the suite partition `suite`'s, when given; only those that stored their summary, when
    `completed`), newest first, at most `limit` of them."""
    conditions = [*(["suite = ?"] if suite is not None else []), *(["state = 'succeeded'"] if completed else [])]
    where = f"WHERE {' AND '.join(conditions)}" if conditions else ""
    bound = f"LIMIT {int(limit)}" if limit is not None else ""
    query = f"SELECT {', '.join(RUN_COLUMNS)} FROM runs {where} ORDER BY {NEWEST_FIRST} {bound}"
    with connect(root, query, views) as con:
        rows = con.execute(query, [suite] if suite is not None else []).fetchall()
    return Listing(RUN_COLUMNS, rows)

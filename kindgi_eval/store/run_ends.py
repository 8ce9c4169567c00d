"""The runs that failed or were stopped before they stored a summary: one row each under `run_ends/`, which the
`runs` view shows beside the runs that completed. Reads and writes the store."""

from __future__ import annotations

from kindgi_eval.store.arrow import to_table
from kindgi_eval.store.layout import (
    DATE_COLUMN,
    PARTITION_COLUMN,
    RUN_COLUMN,
    SHARED,
    StorePath,
    find_table,
    put_parquet,
    remove_folder,
    table_path,
)
from kindgi_eval.store.rows import RunEndRow
from kindgi_eval.store.views import RUN_ENDS


def record_run_end(root: StorePath, partition: str, run_id: str, row: RunEndRow) -> bool:
    """Keep how a run that did not complete ended (once: a run already recorded, or one that stored its summary,
    is left as it is); whether a row was written."""
    if (
        find_table(root, RUN_ENDS, partition, run_id) is not None
        or find_table(root, SHARED.run_summary.asset, partition, run_id) is not None
    ):
        return False
    put_parquet(to_table([row], RunEndRow), table_path(root, RUN_ENDS, partition, row.started_at[:10], run_id))
    return True


def remove_run_ends(root: StorePath, before: str, *, dry_run: bool = False) -> int:
    """Forget the runs that did not complete and started before the day `before` (YYYY-MM-DD), as `prune` forgets the
    others; how many (that would be) removed."""
    doomed = [
        path.parent
        for path in root.glob(f"{RUN_ENDS}/{PARTITION_COLUMN}=*/{DATE_COLUMN}=*/{RUN_COLUMN}=*/data.parquet")
        if path.parent.parent.name.split("=", 1)[1] < before
    ]
    if not dry_run:
        for folder in doomed:
            remove_folder(folder)
    return len(doomed)

"""People's labels of human-review replies in the store: one Parquet file per import, never rewritten.

`<root>/reviews/import_id=<id>/data.parquet` holds every label one `kindgi-eval review import` read, each row naming
its run and suite, so an import may label several runs. A run's tables are written once by the run; its labels come
later, from people, as often as they re-import: so they live beside the runs' tables, not inside a run's folder, and
compaction and prune leave them alone (a label is hand work, and the only source of promoted calibration items).
Of several labels of one reply and rubric item, the latest import's is the one in force. Reads and writes files.
"""

from __future__ import annotations

# pyarrow is imported by the functions that write and read labels: the views name this folder without it.
from kindgi_eval.store.layout import StorePath, put_parquet, read_parquet
from kindgi_eval.store.rows import ReviewRow

REVIEWS = "reviews"
"""The store's folder of labels, and their DuckDB view."""
REVIEW_FILES = "import_id=*/data.parquet"
"""Every import's file, below `<root>/reviews/`."""


def review_path(root: StorePath, import_id: str) -> StorePath:
    """`<root>/reviews/import_id=<id>/data.parquet`: one import's labels."""
    return root / REVIEWS / f"import_id={import_id}" / "data.parquet"


def write_reviews(root: StorePath, import_id: str, rows: list[ReviewRow]) -> StorePath:
    """Store one import's labels whole or not at all, never over an earlier import."""
    from kindgi_eval.store.arrow import to_table

    path = review_path(root, import_id)
    if path.exists():
        raise FileExistsError(f"{path} exists: an import's labels are never overwritten")
    put_parquet(to_table(rows, ReviewRow), path)
    return path


def read_reviews(root: StorePath, run_id: str | None = None) -> list[ReviewRow]:
    """Every label stored (only `run_id`'s when given), oldest import first."""
    import pyarrow as pa

    from kindgi_eval.store.arrow import from_table

    tables = [read_parquet(p) for p in sorted((root / REVIEWS).glob(REVIEW_FILES))]
    rows = from_table(pa.concat_tables(tables), ReviewRow) if tables else []
    rows = [r for r in rows if run_id is None or r.run_id == run_id]
    return sorted(rows, key=lambda r: (r.imported_at, r.import_id, r.line))


def labels_in_force(rows: list[ReviewRow]) -> dict[tuple[str, str, str], ReviewRow]:
    """The label in force of each (run, case, rubric item): the latest import's (pure)."""
    latest: dict[tuple[str, str, str], ReviewRow] = {}
    for row in sorted(rows, key=lambda r: (r.imported_at, r.import_id, r.line)):
        latest[(row.run_id, row.case_id, row.rubric_item)] = row
    return latest

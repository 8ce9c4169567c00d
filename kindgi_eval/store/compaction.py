"""Compaction: a closed month's run files of each asset merged into one sorted file, so a year of nightly
runs is a few dozen files to list rather than a hundred thousand."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import NamedTuple

import pyarrow as pa
import pyarrow.compute as pc

from kindgi_eval.store.layout import (
    DATE_COLUMN,
    HIVE_COLUMNS,
    MONTH_FILES,
    PARTITION_COLUMN,
    RUN_COLUMN,
    RUN_FILES,
    StorePath,
    Table,
    month_path,
    put_parquet,
    read_parquet,
    remove_folder,
)

ROW_GROUP_ROWS = 100_000


class Compacted(NamedTuple):
    """What a compaction merged."""

    runs: int
    months: list[str]


def hive_values(path: StorePath) -> dict[str, str]:
    """`suite`, `date` and `run_id` of a run file, from its folders."""
    parts = path.parent.parts[-3:]
    return {name: part.removeprefix(f"{name}=") for name, part in zip(HIVE_COLUMNS, parts, strict=True)}


def with_hive_columns(table: pa.Table, values: dict[str, str]) -> pa.Table:
    """A run's table with its hive columns stored as real columns, as a month file holds them."""
    for name in HIVE_COLUMNS:
        table = table.append_column(name, pa.array([values[name]] * table.num_rows, pa.string()))
    return table


def compact(root: StorePath, tables: Sequence[Table], before_month: str) -> Compacted:
    """Merge the run files of every month before `before_month` (YYYY-MM) into that month's file, for each of
    `tables`.

    The month file is written first and the run files removed after, so a killed compaction loses nothing: at
    worst a run is in both places until the next compaction, which keeps the month file's copy."""
    runs: set[str] = set()
    months: set[str] = set()
    for table in tables:
        by_month: dict[str, list[StorePath]] = defaultdict(list)
        for path in (root / table.asset).glob(RUN_FILES):
            month = hive_values(path)[DATE_COLUMN][:7]
            if month < before_month:
                by_month[month].append(path)
        for month, paths in sorted(by_month.items()):
            target = month_path(root, table.asset, month)
            old = read_parquet(target) if target.exists() else None
            held = set(old.column(RUN_COLUMN).to_pylist()) if old is not None else set()
            parts = [old] if old is not None else []
            for path in paths:
                values = hive_values(path)
                if values[RUN_COLUMN] not in held:
                    parts.append(with_hive_columns(read_parquet(path), values))
                runs.add(values[RUN_COLUMN])
            merged = pa.concat_tables(parts, promote_options="default").sort_by(
                [(c, "ascending") for c in HIVE_COLUMNS]
            )
            merged = _nullable_where_missing(merged, parts)
            put_parquet(merged, target, row_group_size=ROW_GROUP_ROWS)
            for path in paths:
                remove_run_folder(path.parent)
            months.add(month)
    return Compacted(runs=len(runs), months=sorted(months))


def _nullable_where_missing(merged: pa.Table, parts: Sequence[pa.Table]) -> pa.Table:
    """A column added to a row model since an older run (or month file) was written, or one that has left it, is
    null in the rows of the files without it: nullable in the merged file, whatever the files with it declared."""
    everywhere = set.intersection(*(set(part.column_names) for part in parts))
    if everywhere == set(merged.column_names):
        return merged
    schema = pa.schema(
        [f if f.name in everywhere else f.with_nullable(True) for f in merged.schema], metadata=merged.schema.metadata
    )
    return pa.Table.from_arrays(merged.columns, schema=schema)


def drop_from_months(root: StorePath, tables: Sequence[Table], run_ids: set[str]) -> None:
    """Rewrite every month file of `tables` without the given runs (a month left empty is removed)."""
    for table in tables:
        for path in (root / table.asset).glob(MONTH_FILES):
            held = read_parquet(path)
            keep = pc.invert(pc.is_in(held.column(RUN_COLUMN), pa.array(sorted(run_ids), pa.string())))
            if pc.all(keep).as_py():
                continue
            kept = held.filter(keep)
            if kept.num_rows:
                put_parquet(kept, path, row_group_size=ROW_GROUP_ROWS)
            else:
                remove_folder(path.parent)


def remove_run_folder(folder: StorePath) -> None:
    """Delete a run's folder, then its day and suite folders if that left them empty."""
    remove_folder(folder)
    for parent in (folder.parent, folder.parent.parent):
        # on an object store a folder is only a prefix of keys: with its last key gone, it is gone too
        if (
            parent.name.startswith((f"{DATE_COLUMN}=", f"{PARTITION_COLUMN}="))
            and parent.exists()
            and not any(parent.iterdir())
        ):
            parent.rmdir()

"""The Dagster IO manager over the Parquet store: the one place that turns an asset into a path."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
from pydantic import BaseModel

from kindgi_eval.defs.lineage import input_run, lineage_runs, run_day
from kindgi_eval.kinds import stored_tables, table_named
from kindgi_eval.rules import InputError
from kindgi_eval.store import (
    StorePath,
    discard_area,
    from_table,
    read_table,
    remove_superseded,
    run_area,
    store_root,
    table_path,
    to_table,
    write_atomically,
)


class _Written:
    """The tables this process wrote for the run it is running, kept as the rows it was given: a later step of the same
    run in the same process (`kindgi-eval run` executes the whole chain in one) takes them instead of reading and
    validating the file again, a cost that grows with the suite (benchmarks/README.md). Only one run's tables are kept;
    a step in a process of its own reads the file. The file is written first, so what is kept is what is stored: a
    row model's fields are all stored losslessly (`store.arrow`), and only rows of exactly the table's model are kept."""

    def __init__(self) -> None:
        self.run: str | None = None
        self.tables: dict[tuple[str, str, str], tuple[BaseModel, ...]] = {}

    def keep(self, root: StorePath, asset: str, partition: str, run_id: str, rows: list[BaseModel]) -> None:
        if run_id != self.run:
            self.run, self.tables = run_id, {}
        model = table_named(asset).row
        if all(type(row) is model for row in rows):
            self.tables[(str(root), asset, partition)] = tuple(rows)

    def rows(self, root: StorePath, asset: str, partition: str, run_id: str) -> list[BaseModel] | None:
        kept = self.tables.get((str(root), asset, partition)) if run_id == self.run else None
        return list(kept) if kept is not None else None


_WRITTEN = _Written()


class ParquetStore(dg.ConfigurableIOManager):
    """Every output lands at `<store>/<asset>/suite=<key>/date=<day>/run_id=<run>/data.parquet`, written once."""

    home: str | None = None
    """The runtime folder; unset means `$KINDGI_HOME`, else `./.kindgi`. The store is `<home>/store`, or
    `$KINDGI_STORE` (a folder or a URL) when that is set."""

    def root(self) -> StorePath:
        """The store this IO manager reads and writes."""
        return store_root(Path(self.home).absolute() if self.home else None)

    def handle_output(self, context: dg.OutputContext, obj: list[BaseModel]) -> None:
        """Store an asset's rows as its table, typed by its row model. With its summary stored the run is whole: what it
        recorded on the way (`store.batches`) is removed, and so are the tables of the killed or failed runs it finishes
        that it made again itself (`store.remove_superseded`), each row then stored once; a run the instance holds as
        succeeded, or no longer holds, is never touched."""
        asset = context.asset_key.path[-1]
        run = context.step_context.dagster_run
        day = run_day(context.step_context.instance, run.run_id)
        path = table_path(self.root(), asset, context.partition_key, day, run.run_id)
        table = to_table(obj, table_named(asset).row)
        write_atomically(table, path)
        _WRITTEN.keep(self.root(), asset, context.partition_key, run.run_id, obj)
        context.add_output_metadata({"path": dg.MetadataValue.path(str(path)), "dagster/row_count": len(obj)})
        if asset == "run_summary":
            discard_area(run_area(self.root(), context.partition_key, day, run.run_id))
            line = lineage_runs(context.step_context.instance, run)
            unfinished = {
                r for r, earlier in line[1:] if earlier is not None and earlier.status != dg.DagsterRunStatus.SUCCESS
            }
            if unfinished and (
                gone := remove_superseded(
                    self.root(), context.partition_key, [r for r, _ in line], unfinished, stored_tables()
                )
            ):
                context.log.info(f"tables made again by this run, removed from the runs it finishes: {', '.join(gone)}")

    def load_input(self, context: dg.InputContext) -> list[BaseModel]:
        """The rows of an upstream asset, as its row model: this run's, or those of the run it reads them from
        (`defs.lineage.input_run`: a killed run it finishes, a replay's source, or the latest finished run)."""
        return self._rows(
            context.instance, context.asset_key.path[-1], context.asset_partition_key, context.step_context.dagster_run
        )

    def upstream(self, context: dg.AssetExecutionContext, asset: str) -> list[BaseModel]:
        """The rows of `asset` as `load_input` would give them to the running asset: for an asset that declares an
        upstream without loading it (a `Nothing` input) and reads it only when it needs it."""
        return self._rows(context.instance, asset, context.partition_key, context.run)

    def _rows(self, instance: dg.DagsterInstance, asset: str, partition: str, run: dg.DagsterRun) -> list[BaseModel]:
        try:
            source = input_run(instance, self.root(), asset, partition, run)
        except InputError as e:  # a launchpad's replay_from naming no run of this suite: its words, not a traceback
            raise dg.Failure(description="\n".join(str(p) for p in e.problems)) from None
        kept = _WRITTEN.rows(self.root(), asset, partition, source)
        if kept is not None:
            return kept
        stored = table_named(asset)
        table = read_table(self.root(), stored, partition, source)
        if table is None:
            raise FileNotFoundError(f"run {source} stored no {asset} for suite {partition}; it may have been pruned")
        return from_table(table, stored.row)

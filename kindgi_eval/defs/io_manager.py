"""The Dagster IO manager over the Parquet store: the one place that turns an asset into a path."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import dagster as dg
from pydantic import BaseModel

from kindgi_eval.store import (
    TABLE_OF,
    StorePath,
    from_table,
    read_table,
    store_root,
    table_path,
    to_table,
    write_atomically,
)

SOURCE_RUN_TAG = "kindgi/replies_from"


class ParquetStore(dg.ConfigurableIOManager):
    """Every output lands at `<store>/<asset>/suite=<key>/date=<day>/run_id=<run>/data.parquet`, written once."""

    home: str | None = None
    """The runtime folder; unset means `$KINDGI_HOME`, else `./.kindgi`. The store is `<home>/store`, or
    `$KINDGI_STORE` (a folder or a URL) when that is set."""

    def _root(self) -> StorePath:
        return store_root(Path(self.home).absolute() if self.home else None)

    def handle_output(self, context: dg.OutputContext, obj: list[BaseModel]) -> None:
        """Store an asset's rows as its table, typed by its row model."""
        asset = context.asset_key.path[-1]
        run = context.step_context.dagster_run
        path = table_path(self._root(), asset, context.partition_key, run_day(context.step_context.instance, run.run_id), run.run_id)
        table = to_table(obj, TABLE_OF[asset].row)
        write_atomically(table, path)
        context.add_output_metadata({"path": dg.MetadataValue.path(str(path)), "dagster/row_count": len(obj)})

    def load_input(self, context: dg.InputContext) -> list[BaseModel]:
        """The rows of an upstream asset, as its row model: this run's, or the run it reads them from."""
        asset = context.asset_key.path[-1]
        partition = context.asset_partition_key
        run = context.step_context.dagster_run
        table = read_table(self._root(), asset, partition, run.run_id)
        if table is None:  # not made by this run: a replay's source, or the latest materialisation
            source = source_run(context.instance, context.asset_key, partition, run)
            table = read_table(self._root(), asset, partition, source)
            if table is None:
                raise FileNotFoundError(f"run {source} stored no {asset} for suite {partition}; it may have been pruned")
        return from_table(table, TABLE_OF[asset].row)


def run_day(instance: dg.DagsterInstance, run_id: str) -> str:
    """The UTC day a run started, the same for every asset it writes even across midnight."""
    record = instance.get_run_record_by_id(run_id)
    started = record.start_time if record and record.start_time else None
    moment = datetime.fromtimestamp(started, UTC) if started else datetime.now(UTC)
    return moment.date().isoformat()


def source_run(instance: dg.DagsterInstance, asset_key: dg.AssetKey, partition: str, run: dg.DagsterRun) -> str:
    """The run whose table of `asset_key` this run reads: a replay's tagged source, else the latest materialisation."""
    tagged = run.tags.get(SOURCE_RUN_TAG)
    if tagged:
        return tagged
    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=asset_key, asset_partitions=[partition]), limit=1
    ).records
    if not records:
        raise FileNotFoundError(f"{asset_key.to_user_string()} has never been materialised for suite {partition}")
    return records[0].run_id

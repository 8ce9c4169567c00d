"""The Dagster IO manager over the Parquet store: the one place that turns an asset into a path."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from kindgi_eval.store import TABLE_OF, store_root, table_path, write_atomically
from kindgi_eval.tables import arrow_schema

SOURCE_RUN_TAG = "kindgi/replies_from"


class ParquetStore(dg.ConfigurableIOManager):
    """Every output lands at `<store>/<asset>/suite=<key>/run_id=<run>/data.parquet`, written once."""

    home: str | None = None
    """The runtime folder; unset means `$KINDGI_HOME`, else `./.kindgi`."""

    def _root(self) -> Path:
        return store_root(Path(self.home).absolute() if self.home else None)

    def handle_output(self, context: dg.OutputContext, obj: pd.DataFrame) -> None:
        asset = context.asset_key.path[-1]
        path = table_path(self._root(), asset, context.partition_key, context.run_id)
        table = pa.Table.from_pandas(obj, schema=arrow_schema(TABLE_OF[asset].row), preserve_index=False)
        write_atomically(table, path)
        context.add_output_metadata({"path": dg.MetadataValue.path(str(path)), "dagster/row_count": len(obj)})

    def load_input(self, context: dg.InputContext) -> pd.DataFrame:
        return pq.read_table(self._upstream_path(context)).to_pandas()

    def _upstream_path(self, context: dg.InputContext) -> Path:
        """This run's table if it wrote one; else the replay source's; else the latest materialisation's."""
        asset = context.asset_key.path[-1]
        partition = context.asset_partition_key
        run = context.step_context.dagster_run
        here = table_path(self._root(), asset, partition, run.run_id)
        if here.exists():
            return here
        source = run.tags.get(SOURCE_RUN_TAG)
        if source:
            return table_path(self._root(), asset, partition, source)
        records = context.instance.fetch_materializations(
            dg.AssetRecordsFilter(asset_key=context.asset_key, asset_partitions=[partition]), limit=1
        ).records
        if not records:
            raise FileNotFoundError(f"{asset} has never been materialised for suite {partition}")
        materialization = records[0].asset_materialization
        return Path(materialization.metadata["path"].value)  # type: ignore[union-attr]

"""The Parquet store: rows, their Arrow form, the layout, DuckDB views, compaction and prune. Imports spec."""

from kindgi_eval.store.arrow import arrow_schema, from_table, to_table
from kindgi_eval.store.compaction import compact
from kindgi_eval.store.layout import (
    TABLE_OF,
    StorePath,
    earlier_runs,
    read_rows,
    read_table,
    run_keys,
    run_partition,
    runtime_home,
    store_root,
    table_path,
    write_atomically,
)
from kindgi_eval.store.prune import plan_prune, remove_runs, stored_runs
from kindgi_eval.store.rows import (
    CalibrationRow,
    CriterionRow,
    OutcomeRow,
    ReplyRow,
    RunRow,
    SampleRow,
    StatusRow,
    SuiteRow,
)
from kindgi_eval.store.views import connect, export_database, format_rows

__all__ = ["CalibrationRow", "CriterionRow", "OutcomeRow", "ReplyRow", "RunRow", "SampleRow", "StatusRow", "StorePath", "SuiteRow", "TABLE_OF", "arrow_schema", "compact", "connect", "earlier_runs", "export_database", "format_rows", "from_table", "plan_prune", "read_rows", "read_table", "remove_runs", "run_keys", "run_partition", "runtime_home", "store_root", "stored_runs", "table_path", "to_table", "write_atomically"]

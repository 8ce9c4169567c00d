"""The Parquet store: rows, their Arrow form, the layout, DuckDB views, compaction, prune and runs' recordings in progress. Imports rules."""

from kindgi_eval.store.arrow import arrow_schema, from_table, to_table
from kindgi_eval.store.batches import (
    BatchWriter,
    Manifest,
    area_run_id,
    claim,
    discard_area,
    find_run_areas,
    read_batches,
    read_manifest,
    read_sent,
    run_area,
    write_manifest,
    write_sent,
)
from kindgi_eval.store.compaction import compact
from kindgi_eval.store.contact_cache import CONTACT_CACHE, CachedContact, cache_contact, cached_contact
from kindgi_eval.store.kind_views import FigureColumn, KindView
from kindgi_eval.store.listing import RUN_COLUMNS, Listing, newest_runs
from kindgi_eval.store.killed_runs import KilledRun, killed_run, refuse_finished
from kindgi_eval.store.layout import (
    SHARED,
    StorePath,
    Table,
    earlier_runs,
    find_table,
    read_rows,
    read_stored,
    read_table,
    rows_if_stored,
    run_keys,
    run_partition,
    runtime_home,
    store_root,
    store_tables,
    table_path,
    write_atomically,
)
from kindgi_eval.store.prune import plan_areas, plan_prune, recorded_areas, remove_areas, remove_runs, remove_superseded, stored_runs
from kindgi_eval.store.replay_source import ReplaySource, replay_source
from kindgi_eval.store.rows import (
    CalibrationRow,
    CriterionRow,
    HandlerRow,
    MetricRow,
    OutcomeRow,
    ReplyRow,
    ReviewRow,
    RunEndRow,
    RunRow,
    SampleRow,
    StatusRow,
    TurnRow,
    StoredRow,
    SuiteRow,
    params_json,
)
from kindgi_eval.store.night_runs import SuiteNight, night_runs
from kindgi_eval.store.run_ends import record_run_end, remove_run_ends
from kindgi_eval.store.reviews import labels_in_force, read_reviews, write_reviews
from kindgi_eval.store.views import Views, connect, export_database, format_rows, view_names

__all__ = ["RUN_COLUMNS", "Listing", "newest_runs", "FigureColumn", "KindView", "MetricRow", "read_stored", "BatchWriter", "CalibrationRow", "CriterionRow", "HandlerRow", "KilledRun", "Manifest", "OutcomeRow", "ReviewRow", "labels_in_force", "read_reviews", "write_reviews", "ReplaySource", "ReplyRow", "RunRow", "SampleRow", "StatusRow", "StorePath", "SuiteRow", "params_json", "area_run_id", "arrow_schema", "claim", "compact", "connect", "discard_area", "earlier_runs", "export_database", "find_run_areas", "find_table", "format_rows", "view_names", "killed_run", "from_table", "plan_areas", "plan_prune", "read_batches", "read_manifest", "read_sent", "write_sent", "read_rows", "read_table", "recorded_areas", "refuse_finished", "remove_areas", "remove_runs", "remove_superseded", "replay_source", "rows_if_stored", "run_area", "run_keys", "run_partition", "runtime_home", "store_root", "stored_runs", "table_path", "to_table", "write_atomically", "write_manifest", "SHARED", "StoredRow", "Table", "Views", "store_tables", "remove_run_ends", "SuiteNight", "night_runs", "RunEndRow", "record_run_end", "CONTACT_CACHE", "CachedContact", "cache_contact", "cached_contact", "TurnRow"]

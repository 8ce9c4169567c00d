"""Each suite kind's own code, one folder per kind, and the table of installed kinds. Imports the folders below it."""

from kindgi_eval.kinds.budget import hold_budget, run_calls
from kindgi_eval.kinds.custom import grade_replies, handler_of
from kindgi_eval.kinds.figures import count, estimate, figures_of, own_rows, result_of, store_views, stored_result
from kindgi_eval.kinds.human_review import QueueRow, promoted_items, queue_rows, summarize_queue
from kindgi_eval.kinds.human_review.check import promotion
from kindgi_eval.kinds.kind import (
    JUDGE_USD,
    Assertions,
    Items,
    KindResult,
    KindRows,
    Pinning,
    Pins,
    Stage,
    StageInputs,
    Starter,
    SuiteKind,
)
from kindgi_eval.kinds.pairwise import judge_pairwise, pair_key
from kindgi_eval.kinds.table import (
    GROUP,
    KindTableError,
    cases_of,
    consumers,
    kind_named,
    kinds,
    models_of,
    scenarios_of,
    stored_tables,
    table_named,
)

__all__ = [
    "Assertions",
    "GROUP",
    "Items",
    "JUDGE_USD",
    "KindResult",
    "KindRows",
    "KindTableError",
    "Pinning",
    "Pins",
    "QueueRow",
    "Stage",
    "StageInputs",
    "Starter",
    "SuiteKind",
    "cases_of",
    "scenarios_of",
    "consumers",
    "count",
    "estimate",
    "figures_of",
    "grade_replies",
    "handler_of",
    "hold_budget",
    "run_calls",
    "judge_pairwise",
    "kind_named",
    "kinds",
    "models_of",
    "own_rows",
    "pair_key",
    "promoted_items",
    "promotion",
    "queue_rows",
    "result_of",
    "store_views",
    "stored_result",
    "stored_tables",
    "summarize_queue",
    "table_named",
]

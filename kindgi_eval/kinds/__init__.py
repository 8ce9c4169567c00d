"""Each suite kind's own code, one folder per kind, and the table of installed kinds. Imports the folders below it."""

from kindgi_eval.kinds.accuracy import accuracy_metrics, accuracy_rows
from kindgi_eval.kinds.custom import CustomSummary, custom_metrics, custom_rows, grade_replies, handler_of, summarize_custom
from kindgi_eval.kinds.figures import count, estimate, figures_of, kind_views, own_rows, result_of, stored_result
from kindgi_eval.kinds.human_review import QueueSummary, promoted_items, queue_rows, summarize_queue
from kindgi_eval.kinds.kind import JUDGE_USD, Assertions, Items, KindResult, KindRows, Pinning, Pins, Stage, StageInputs, SuiteKind
from kindgi_eval.kinds.pairwise import agreement_of, judge_pairwise, pair_key, pairwise_metrics
from kindgi_eval.kinds.regression import regression_metrics, regression_rows, resolve_baseline
from kindgi_eval.kinds.human_review.check import Promotion, promotion
from kindgi_eval.kinds.table import GROUP, KindTableError, cases_of, consumers, kind_named, kinds

__all__ = ["GROUP", "JUDGE_USD", "Pinning", "Pins", "Stage", "StageInputs", "Assertions", "CustomSummary", "Items", "KindResult", "KindRows", "KindTableError",
           "QueueSummary", "SuiteKind", "accuracy_metrics", "accuracy_rows", "agreement_of", "cases_of", "consumers", "count", "Promotion", "promotion", "custom_metrics",
           "custom_rows", "estimate", "figures_of", "grade_replies", "handler_of", "judge_pairwise", "kind_named", "kind_views", "kinds", "own_rows",
           "pair_key", "pairwise_metrics", "promoted_items", "queue_rows", "regression_metrics", "regression_rows", "resolve_baseline",
           "result_of", "stored_result", "summarize_custom", "summarize_queue"]

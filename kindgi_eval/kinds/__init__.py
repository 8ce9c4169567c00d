"""Each suite kind's own code, one folder per kind, and the table of installed kinds. Imports the folders below it."""

from kindgi_eval.kinds.accuracy import accuracy_columns, accuracy_rows
from kindgi_eval.kinds.custom import CustomSummary, custom_columns, custom_rows, grade_replies, handler_of, summarize_custom
from kindgi_eval.kinds.human_review import QueueSummary, promoted_items, queue_rows, summarize_queue
from kindgi_eval.kinds.kind import ITEM_TABLES, Assertions, Items, KindRows, SuiteKind
from kindgi_eval.kinds.pairwise import agreement_of, judge_pairwise, pair_key, pairwise_columns
from kindgi_eval.kinds.regression import regression_columns, regression_rows, resolve_baseline
from kindgi_eval.kinds.table import GROUP, KindTableError, cases_of, kind_named, kinds

__all__ = ["GROUP", "ITEM_TABLES", "Assertions", "CustomSummary", "Items", "KindRows", "KindTableError", "QueueSummary", "SuiteKind", "accuracy_columns", "accuracy_rows", "agreement_of",
           "cases_of", "custom_columns", "custom_rows", "grade_replies", "handler_of", "judge_pairwise", "kind_named", "kinds", "pair_key",
           "pairwise_columns", "promoted_items", "queue_rows", "regression_columns", "regression_rows", "resolve_baseline", "summarize_custom",
           "summarize_queue"]

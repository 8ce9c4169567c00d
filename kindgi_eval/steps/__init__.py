"""What each asset computes, one module per stage, as plain functions of rows: no Dagster. Imports the folders below it."""

from kindgi_eval.steps.accuracy import accuracy_columns, accuracy_rows
from kindgi_eval.steps.agent_replies import ask_agent
from kindgi_eval.steps.calibration import calibration_rows
from kindgi_eval.steps.custom import CustomSummary, custom_columns, custom_rows, grade_replies, handler_of, summarize_custom
from kindgi_eval.steps.judge_samples import sample_judge, sample_key
from kindgi_eval.steps.outcomes import outcome_rows
from kindgi_eval.steps.pairwise import agreement_of, askings, judge_pairwise, pair_key, pairwise_columns
from kindgi_eval.steps.regressions import regression_columns, regression_rows, resolve_baseline
from kindgi_eval.steps.review_queue import QueueSummary, promoted_items, queue_rows, summarize_queue
from kindgi_eval.steps.run_summary import code_version, run_row
from kindgi_eval.steps.statuses import status_rows
from kindgi_eval.steps.suite import cases_of, suite_rows

__all__ = ["CustomSummary", "custom_columns", "custom_rows", "grade_replies", "handler_of", "summarize_custom", "QueueSummary", "promoted_items", "queue_rows", "summarize_queue", "accuracy_rows", "agreement_of", "ask_agent", "askings", "calibration_rows", "cases_of", "code_version", "judge_pairwise", "outcome_rows", "pair_key", "pairwise_columns", "regression_columns", "regression_rows", "resolve_baseline", "run_row", "sample_judge", "sample_key", "status_rows", "suite_rows", "accuracy_columns"]

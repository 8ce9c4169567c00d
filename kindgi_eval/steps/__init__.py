"""What each asset computes, one module per stage, as plain functions of rows: no Dagster. Imports the folders below it."""

from kindgi_eval.steps.accuracy import AccuracySummary, accuracy_rows, summarize_accuracy
from kindgi_eval.steps.agent_replies import ask_agent
from kindgi_eval.steps.calibration import calibration_rows
from kindgi_eval.steps.judge_samples import sample_judge, sample_key
from kindgi_eval.steps.outcomes import outcome_rows
from kindgi_eval.steps.regressions import pass_rate_change, regression_rows, resolve_baseline
from kindgi_eval.steps.run_summary import code_version, run_row
from kindgi_eval.steps.statuses import status_rows
from kindgi_eval.steps.suite import cases_of, suite_rows

__all__ = ["AccuracySummary", "accuracy_rows", "ask_agent", "calibration_rows", "cases_of", "code_version", "outcome_rows", "pass_rate_change", "regression_rows", "resolve_baseline", "run_row", "sample_judge", "sample_key", "status_rows", "suite_rows", "summarize_accuracy"]

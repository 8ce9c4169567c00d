"""The shared chain, one module per stage, as plain functions of rows: no Dagster. Imports the folders below it."""

from kindgi_eval.steps.agent_replies import FRESH_CONTACT_TAG, agent_calls_saved, ask_agent, contact_side, recorded_key
from kindgi_eval.steps.calibration import calibration_rows
from kindgi_eval.steps.judge_samples import BatchSetup, sample_judge, sample_key
from kindgi_eval.steps.outcomes import outcome_rows
from kindgi_eval.steps.preflight import Preflight, planned_suite, preflight
from kindgi_eval.steps.run_metrics import (
    JUDGED_FAIL_RATE,
    JUDGED_FAIL_RATE_CORRECTED,
    JUDGED_RATES,
    PASS_RATE_CORRECTED,
    judged_rate_rows,
)
from kindgi_eval.steps.run_summary import code_version, run_row
from kindgi_eval.steps.statuses import status_rows
from kindgi_eval.steps.suite import suite_rows

__all__ = [
    "JUDGED_FAIL_RATE",
    "JUDGED_FAIL_RATE_CORRECTED",
    "JUDGED_RATES",
    "PASS_RATE_CORRECTED",
    "judged_rate_rows",
    "ask_agent",
    "calibration_rows",
    "code_version",
    "outcome_rows",
    "run_row",
    "sample_judge",
    "sample_key",
    "status_rows",
    "suite_rows",
    "BatchSetup",
    "FRESH_CONTACT_TAG",
    "contact_side",
    "agent_calls_saved",
    "recorded_key",
    "Preflight",
    "planned_suite",
    "preflight",
]

"""The Dagster definitions `dagster dev -w workspace.yaml` loads: the chain, its checks, its jobs, the nightly schedule
and the sensors."""

import warnings

import dagster as dg

from kindgi_eval.defs.assets import CHAIN
from kindgi_eval.defs.console_log import LOGGER, short_console
from kindgi_eval.defs.io_manager import ParquetStore
from kindgi_eval.defs.jobs import JOBS
from kindgi_eval.defs.night import night_findings
from kindgi_eval.defs.recovery import given_up_runs
from kindgi_eval.defs.resources import EvalSettings, RunClients
from kindgi_eval.defs.run_ends import ended_runs
from kindgi_eval.defs.schedules import nightly_suites, suite_changes

with warnings.catch_warnings():  # source code references are a beta API in Dagster 1.13
    warnings.simplefilter("ignore", dg.BetaWarning)
    LINKED_CHAIN = dg.with_source_code_references(CHAIN)
    """The chain, each asset linking to its source in the UI."""

defs = dg.Definitions(
    assets=LINKED_CHAIN,
    jobs=JOBS,  # the command line's runs too: kindgi_eval.defs.runs executes these
    schedules=[nightly_suites],
    sensors=[suite_changes, given_up_runs, ended_runs, night_findings],
    # Settings come per partition from the tenants file (KINDGI_TENANTS); the store from KINDGI_STORE, else KINDGI_HOME;
    # the agent, the judge and the sandbox from the clients, for those settings.
    resources={"io_manager": ParquetStore(), "eval_settings": EvalSettings(), "clients": RunClients()},
    # One process per run, not per step: the steps share the run's Parquet files and litellm's import (~4 s).
    executor=dg.in_process_executor,
    # Dagster's console logger serves every run no config names a logger for; the command line names its own.
    loggers={"console": dg.colored_console_logger, LOGGER: short_console},
)

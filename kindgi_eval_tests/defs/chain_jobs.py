"""The `evaluate_suite` job as Dagster reconstructs it in another process (the UI's and the daemon's way of running
it), under either executor; run as a script, it runs the chain once, so a test can kill it halfway.

    python -m kindgi_eval_tests.defs.chain_jobs SETTINGS_JSON PARTITION HOME

Imports no pytest."""

from __future__ import annotations

import sys
from pathlib import Path

import dagster as dg

from kindgi_eval.defs.assets import CHAIN
from kindgi_eval.defs.io_manager import ParquetStore
from kindgi_eval.defs.lineage import PARTITION_TAG
from kindgi_eval.defs.resources import EvalSettings, RunClients, pinned_tags
from kindgi_eval.inputs import RunSettings


def in_process_chain() -> dg.JobDefinition:
    """The job as the code location defines it: every step in the run's own process."""
    from kindgi_eval.defs.definitions import defs

    return defs.resolve_job_def("evaluate_suite")


FORKSERVER = {"forkserver": {"preload_modules": ["kindgi_eval.defs.definitions", "kindgi_eval_tests.defs.chain_jobs"]}}
"""Each step's process forked from a server that imported the code location once (Dagster's `start_method`), instead
of a new interpreter importing Dagster and the chain for every step: still a process per step, none of them the
run's, and nothing of one step's in another but what the store holds."""


def multiprocess_chain() -> dg.JobDefinition:
    """The chain's assets (their checks are evaluated in their steps) with each step in a process of its own: nothing
    passes between steps but the store."""
    steps = dg.define_asset_job("evaluate_suite_steps", selection=dg.AssetSelection.assets(*CHAIN))
    defs = dg.Definitions(
        assets=CHAIN,
        jobs=[steps],
        resources={"io_manager": ParquetStore(), "eval_settings": EvalSettings(), "clients": RunClients()},
        executor=dg.multiprocess_executor.configured({"max_concurrent": 2, "start_method": FORKSERVER}),
    )
    return defs.resolve_job_def("evaluate_suite_steps")


def run_config(home: Path) -> dict:
    """The launchpad's config for a run on the store under `home`."""
    return {"resources": {"io_manager": {"config": {"home": str(home)}}}}


def execute(
    job, instance: dg.DagsterInstance, settings: RunSettings, key: str, home: Path, **options
) -> dg.ExecuteJobResult:
    """One run of `job` (a function above) for partition `key`, as a Dagster run worker executes it."""
    instance.add_dynamic_partitions("suites", [key])
    tags = {PARTITION_TAG: key, **pinned_tags(settings), **options.pop("tags", {})}
    return dg.execute_job(dg.reconstructable(job), instance, run_config=run_config(home), tags=tags, **options)


if __name__ == "__main__":
    settings_json, partition, home = sys.argv[1:4]
    with dg.DagsterInstance.get() as current:
        execute(in_process_chain, current, RunSettings.model_validate_json(settings_json), partition, Path(home))

"""What the production instance's run monitoring (deploy/dagster-postgres.yaml) buys a night whose code server is
killed while it launches a run: the worker that server had spawned leaves the run alone."""

from __future__ import annotations

import dagster as dg
import pytest
import yaml
from dagster._core.definitions.reconstruct import ReconstructableRepository
from dagster._core.execution.api import execute_run_iterator

from kindgi_eval_tests.conftest import REPO

CONFIG = yaml.safe_load((REPO / "deploy" / "dagster-postgres.yaml").read_text())


@pytest.mark.parametrize(
    ("overrides", "status"),
    [
        ({"run_monitoring": CONFIG["run_monitoring"]}, dg.DagsterRunStatus.STARTED),  # the profile's instance
        ({}, dg.DagsterRunStatus.FAILURE),  # without monitoring: RUN_WORKER_RESTART, the tenant's night lost
    ],
)
def test_a_stray_worker_leaves_a_run_another_worker_has_alone(overrides, status) -> None:
    job = ReconstructableRepository.for_module("kindgi_eval.defs.definitions", "defs").get_reconstructable_job(
        "evaluate_suite"
    )
    with dg.instance_for_test(overrides=overrides) as instance:
        # the queue took the run back from the killed code server and a new one started it; the old server's worker
        # comes up late and finds it started
        run = instance.add_run(dg.DagsterRun(job_name="evaluate_suite", status=dg.DagsterRunStatus.STARTED))
        list(execute_run_iterator(job, run, instance))
        assert instance.get_run_by_id(run.run_id).status == status


def test_a_run_stuck_starting_or_started_with_no_worker_left_is_failed_for_its_retry() -> None:
    monitoring, retries = CONFIG["run_monitoring"], CONFIG["run_retries"]
    assert monitoring["enabled"] and retries["enabled"] and retries["max_retries"] >= 1
    # a launch lost with its code server is failed well within the night; a worker dead with no code server to say
    # so (the default launcher has no health check) by the run's longest allowed time
    assert 0 < monitoring["start_timeout_seconds"] <= 300
    assert 0 < monitoring["max_runtime_seconds"] <= 4 * 3600

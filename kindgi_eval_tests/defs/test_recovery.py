"""The sensor that resumes a suite's run Dagster gave up on: which failed runs it resumes, and the run it asks for,
evaluated against a real instance with Dagster's own sensor context."""

from __future__ import annotations

import dagster as dg
import pytest
from dagster._core.events import JobFailureData, RunFailureReason

from kindgi_eval.defs.lineage import PARTITION_TAG, RESUMES_TAG, parent_of
from kindgi_eval.defs.recovery import RECOVERY_LIMIT, RECOVERY_TAG, given_up_runs, is_given_up
from kindgi_eval.defs.resources import SETTINGS_TAG

GIVEN_UP = {"dagster/will_retry": "false"}


@pytest.mark.parametrize(
    ("tags", "expected"),
    [
        ({"dagster/will_retry": "true", "dagster/failure_reason": "RUN_EXCEPTION"}, False),  # Dagster retries it itself
        ({"dagster/failure_reason": "RUN_EXCEPTION"}, False),  # Dagster has not decided yet
        ({**GIVEN_UP, "dagster/auto_retry_run_id": "r2"}, False),  # its retry was made: that run is what counts
        # "Failed to retry run": the retry could not be made (its code server dead), whatever failed the run
        ({**GIVEN_UP, "dagster/failure_reason": "RUN_EXCEPTION"}, True),
        ({**GIVEN_UP, "dagster/failure_reason": "STEP_FAILURE"}, True),
        ({**GIVEN_UP}, True),  # failed with no reason recorded (run monitoring's timeouts)
        # a step failed again in Dagster's last retry: the suite's own failure, for good
        ({**GIVEN_UP, "dagster/failure_reason": "STEP_FAILURE", "dagster/retry_number": "1"}, False),
        # the last retry's worker failed it for the machine's reasons (a stray worker, a dead code server): resumed
        ({**GIVEN_UP, "dagster/failure_reason": "RUN_WORKER_RESTART", "dagster/retry_number": "1"}, True),
        ({**GIVEN_UP, "dagster/failure_reason": "RUN_EXCEPTION", RECOVERY_TAG: "1"}, True),
        (
            {**GIVEN_UP, "dagster/failure_reason": "RUN_EXCEPTION", RECOVERY_TAG: str(RECOVERY_LIMIT)},
            False,
        ),  # line spent
    ],
)
def test_a_run_is_resumed_only_where_dagster_left_it_failed_without_a_retry_it_could_make(tags, expected) -> None:
    assert is_given_up(tags, max_retries=1, retries_step_failures=True) is expected


def test_a_step_failure_is_never_resumed_where_the_instance_does_not_retry_step_failures() -> None:
    # Dagster itself marks such a run will_retry=false at once; it is the operator's choice, not a retry lost
    assert not is_given_up(
        {**GIVEN_UP, "dagster/failure_reason": "STEP_FAILURE"}, max_retries=1, retries_step_failures=False
    )
    assert is_given_up(
        {**GIVEN_UP, "dagster/failure_reason": "RUN_EXCEPTION"}, max_retries=1, retries_step_failures=False
    )


def failed_run(instance: dg.DagsterInstance, key: str, reason: RunFailureReason, **tags: str) -> dg.DagsterRun:
    run = instance.add_run(
        dg.DagsterRun(
            job_name="evaluate_suite",
            tags={
                PARTITION_TAG: key,
                "kindgi/tenant": key.split(".")[0],
                SETTINGS_TAG: '{"eval_dir": "x"}',
                "dagster/schedule_name": "nightly_suites",
                ".dagster/grpc_info": '{"socket": "gone"}',
                **tags,
            },
            asset_selection=frozenset({dg.AssetKey("suite"), dg.AssetKey("agent_replies")}),
        )
    )
    instance.report_run_failed(run, job_failure_data=JobFailureData(error=None, failure_reason=reason))
    return run


def evaluate(instance: dg.DagsterInstance) -> dg.SensorResult:
    return given_up_runs(dg.build_sensor_context(instance=instance))


def test_the_sensor_resumes_a_run_whose_retry_could_not_be_made_once_with_its_settings() -> None:
    with dg.instance_for_test(overrides={"run_retries": {"enabled": True, "max_retries": 1}}) as instance:
        lost = failed_run(instance, "alpha.golden", RunFailureReason.RUN_EXCEPTION)
        retried = failed_run(instance, "beta.golden", RunFailureReason.RUN_EXCEPTION)
        assert instance.get_run_by_id(lost.run_id).tags["dagster/will_retry"] == "true"  # Dagster meant to retry both
        assert evaluate(instance).run_requests == []
        # the daemon's retry of alpha's run failed ("Failed to retry run": its code server was dead); beta's was made
        instance.add_run_tags(lost.run_id, GIVEN_UP)
        instance.add_run_tags(retried.run_id, {**GIVEN_UP, "dagster/auto_retry_run_id": "beta-retry"})

        (request,) = evaluate(instance).run_requests
        assert request.partition_key == "alpha.golden"
        assert request.asset_selection == [dg.AssetKey("agent_replies"), dg.AssetKey("suite")]  # the failed run's
        assert request.tags[SETTINGS_TAG] == '{"eval_dir": "x"}'  # the settings resolved at the tick, not again
        assert request.tags[RECOVERY_TAG] == "1"
        # Dagster's own tags stay behind: not a retry of Dagster's to count, nor a launch on the dead code server
        assert not any(tag.startswith(("dagster/", ".dagster/")) for tag in request.tags)
        assert request.tags["kindgi/tenant"] == "alpha"
        # the run resumes the failed one from its recordings, as `kindgi-eval run --resume` does
        assert parent_of(dg.DagsterRun(job_name="evaluate_suite", tags=request.tags)) == lost.run_id
        assert request.tags[RESUMES_TAG] == lost.run_id
        # every tick asks with the same key, so the daemon starts it once
        assert [r.run_key for r in evaluate(instance).run_requests] == [request.run_key]

        # once the suite has a later run (this resumption, a new tick's), the failed one is left alone
        instance.add_run(dg.DagsterRun(job_name="evaluate_suite", tags={PARTITION_TAG: "alpha.golden", **request.tags}))
        assert evaluate(instance).run_requests == []


def test_the_sensor_leaves_runs_alone_where_the_instance_does_not_retry_runs() -> None:
    with dg.instance_for_test() as instance:
        run = failed_run(instance, "alpha.golden", RunFailureReason.RUN_EXCEPTION, **GIVEN_UP)
        assert instance.get_run_by_id(run.run_id).status == dg.DagsterRunStatus.FAILURE
        result = evaluate(instance)
        assert result.run_requests == [] and "does not retry runs" in result.skip_reason.skip_message


def test_the_tags_read_are_the_ones_dagster_writes() -> None:
    # The sensor reads Dagster's run-retry tags by the names the UI shows; a Dagster that renames one must fail here,
    # not leave the sensor resuming nothing.
    from dagster._core.storage import tags as dagsters

    from kindgi_eval.defs import recovery

    assert recovery.WILL_RETRY_TAG == dagsters.WILL_RETRY_TAG
    assert recovery.AUTO_RETRY_RUN_ID_TAG == dagsters.AUTO_RETRY_RUN_ID_TAG
    assert recovery.RETRY_NUMBER_TAG == dagsters.RETRY_NUMBER_TAG
    assert recovery.RUN_FAILURE_REASON_TAG == dagsters.RUN_FAILURE_REASON_TAG
    assert recovery.STEP_FAILURE == RunFailureReason.STEP_FAILURE.value
    assert recovery.DAGSTERS == (dagsters.SYSTEM_TAG_PREFIX, dagsters.HIDDEN_TAG_PREFIX)

"""The code location's jobs, one per way a tenant suite is evaluated; CLI runs go through them too, so the Runs page
names the job a run belongs to."""

from __future__ import annotations

import dagster as dg

from kindgi_eval.defs.assets import CHAIN, STAGED, SUITES
from kindgi_eval.inputs import load_tenants
from kindgi_eval.rules import InputError

EVALUATE = "evaluate_suite"
"""The whole chain: what the schedule, the sensor, `kindgi-eval run` and `run --resume` run."""
REPLAY = "replay_suite"
"""judge_samples and what follows, reading a stored run's suite, replies and outcomes: `kindgi-eval replay`."""


def suite_tags(key: str) -> dict[str, str]:
    """The tenant and provider tags of partition `key`'s runs; none when the tenants file does not declare it."""
    try:
        return load_tenants(partial=True).suite(key).tags()
    except InputError:
        return {}  # the run itself fails with the tenants file's problems


def suite_job(name: str, selection: dg.AssetSelection, description: str) -> dg.UnresolvedAssetJobDefinition:
    """A job over one tenant suite (a partition). Its runs launched by hand or by a backfill carry the same tags as
    the schedule's, so dagster.yaml's per-tenant and per-provider limits hold for them too."""
    return dg.define_asset_job(
        name,
        selection=selection,
        config=dg.PartitionedConfig(
            partitions_def=SUITES, run_config_for_partition_key_fn=lambda key: {}, tags_for_partition_key_fn=suite_tags
        ),
        description=description,
    )


SELECTIONS = {
    EVALUATE: dg.AssetSelection.assets(*CHAIN),
    REPLAY: dg.AssetSelection.assets("judge_samples").downstream(),
}
"""What each job materialises when it is run whole (from the launchpad)."""


def kind_selection(job: str, kind: str) -> list[dg.AssetKey]:
    """The assets a run of `job` materialises for a suite of `kind`: the job's own, less the stages of the other
    kinds, so that a suite's run starts no step that has nothing to do for it. (A run of the whole job, from the
    launchpad, also starts the other kinds' stages, and each stores no row for a suite not of its kind.)"""
    others = {dg.AssetKey(other.stage.table) for other in STAGED if other.name != kind}
    return sorted(SELECTIONS[job].resolve(CHAIN) - others, key=lambda key: key.to_user_string())


evaluate_suite = suite_job(
    EVALUATE,
    SELECTIONS[EVALUATE],
    "The whole chain and its checks for one tenant suite (a partition): what the schedule and sensor run.",
)
replay_suite = suite_job(
    REPLAY,
    SELECTIONS[REPLAY],
    "Re-judges a run's stored replies, asking no agent: judge_samples and what follows, for one tenant suite. Set "
    "resources.eval_settings.config.replay_from to the run whose replies are re-judged (else the latest that had "
    "succeeded) and judge_model to the judge.",
)
JOBS = [evaluate_suite, replay_suite]

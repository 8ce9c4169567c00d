"""Starting the chain as a Dagster run in the persistent instance that `dagster dev` shows."""

from __future__ import annotations

import json
import os
from importlib.resources import files
from pathlib import Path

import dagster as dg

from kindgi_eval.defs.assets import SUITES
from kindgi_eval.defs.console_log import LOGGER
from kindgi_eval.defs.jobs import EVALUATE, REPLAY, kind_selection
from kindgi_eval.defs.lineage import PARTITION_TAG, PINNED_TAGS, RESUMES_TAG, SOURCE_RUN_TAG
from kindgi_eval.defs.resources import pinned_settings, pinned_tags
from kindgi_eval.defs.run_ends import failure_cause, record_ended_run
from kindgi_eval.inputs import RunSettings
from kindgi_eval.store import store_root

QUIET_LOGS = {"loggers": {LOGGER: {"config": {"log_level": "INFO"}}}}
HOME_FROM_ENV = "base_dir: {env: DAGSTER_HOME}"
"""How the packaged dagster.yaml names its storage's folder."""


class RunFailed(Exception):
    """The chain itself could not complete (as opposed to a case failing)."""


def open_instance(home: Path) -> dg.DagsterInstance:
    """The instance in `$DAGSTER_HOME`, else `<home>/dagster`, created with the packaged dagster.yaml if new (its
    storage's folder written in, so that the instance opens with or without $DAGSTER_HOME set)."""
    dagster_home = Path(os.environ.get("DAGSTER_HOME") or home / "dagster").absolute()
    dagster_home.mkdir(parents=True, exist_ok=True)
    config = dagster_home / "dagster.yaml"
    if not config.exists():
        packaged = (files("kindgi_eval") / "dagster.yaml").read_text()
        config.write_text(packaged.replace(HOME_FROM_ENV, f"base_dir: {json.dumps(str(dagster_home))}"))
    os.environ["DAGSTER_HOME"] = str(dagster_home)
    return dg.DagsterInstance.get()


def recorded_settings(instance: dg.DagsterInstance, run_id: str) -> RunSettings | None:
    """The settings a stored run was pinned to, as its Dagster run's tags hold them; None when the instance no longer
    holds that run (pruned, another instance) or it was launched unpinned."""
    run = instance.get_run_by_id(run_id)
    return pinned_settings(run.tags) if run is not None else None


def run_chain(
    instance: dg.DagsterInstance,
    home: Path,
    settings: RunSettings,
    key: str,
    kind: str,
    *,
    job: str = EVALUATE,
    tags: dict[str, str] | None = None,
    outputs: dict[str, list] | None = None,
) -> str:
    """Run one of the code location's jobs (`jobs.EVALUATE`, the whole chain, or `jobs.REPLAY`) for one suite
    partition of `kind`, pinned to `settings`, in this process; the Dagster run id. Only the stages a suite of that
    kind has are started (`jobs.kind_selection`). `outputs`, where given, is filled with each stage's rows by asset
    name, as the stage handed them to the store: a report printed in this process need not read back what it wrote.

    The job is the one `dagster dev` shows, checks included, so the Runs page names it. The partition is given as
    its tag rather than through the job's partitioned config, whose tags come from the tenants file, which a run
    started here does not read."""
    from kindgi_eval.defs.definitions import defs

    instance.add_dynamic_partitions(SUITES.name, [key])
    selection = kind_selection(job, kind)
    result = defs.resolve_job_def(job).execute_in_process(
        run_config={**QUIET_LOGS, "resources": {"io_manager": {"config": {"home": str(home)}}}},
        instance=instance,
        asset_selection=selection,
        tags={PARTITION_TAG: key, **pinned_tags(settings), **(tags or {})},
        raise_on_error=False,
    )
    if not result.success:
        try:  # a row of `runs` saying so; the store may be what failed the run, and the run's own failure is the news
            record_ended_run(instance, store_root(home), instance.get_run_record_by_id(result.run_id))
        except Exception:  # noqa: BLE001
            pass
        failures = [e for e in result.all_events if e.is_step_failure]
        detail = failure_cause(failures[0]) if failures else "see the Dagster run's logs"
        raise RunFailed(f"run {result.run_id} did not complete: {detail}")
    if outputs is not None:
        outputs.update(
            {asset.path[-1]: result.asset_value(asset) for asset in selection}
        )  # held by the result as it ran
    return result.run_id


def replay_chain(
    instance: dg.DagsterInstance,
    home: Path,
    settings: RunSettings,
    key: str,
    kind: str,
    source: str,
    outputs: dict[str, list] | None = None,
) -> str:
    """Materialise only the judged stages, reading `source`'s stored suite, replies and outcomes: no agent call."""
    return run_chain(instance, home, settings, key, kind, job=REPLAY, tags={SOURCE_RUN_TAG: source}, outputs=outputs)


def resume_chain(
    instance: dg.DagsterInstance,
    home: Path,
    settings: RunSettings,
    key: str,
    kind: str,
    killed: str,
    replies_from: str | None,
    outputs: dict[str, list] | None = None,
) -> str:
    """Finish a killed run as a new run, under its own id, tagged `kindgi/resumes=<killed>`: every stage runs again,
    the paid ones reusing what the killed run recorded (a killed replay is resumed as a replay of the same source).

    The killed run, left "started" in the instance by a process that died without a word, is marked failed. The
    baseline or variants it resolved are the resumed run's too (`lineage.PINNED_TAGS`)."""
    old = instance.get_run_by_id(killed)
    if old is not None and not old.is_finished:
        instance.report_run_failed(
            old, message="its process ended without finishing the run (killed); resumed by kindgi-eval run --resume"
        )
    pinned = {tag: old.tags[tag] for tag in PINNED_TAGS if old is not None and tag in old.tags}
    tags = {RESUMES_TAG: killed, **pinned, **({SOURCE_RUN_TAG: replies_from} if replies_from else {})}
    return run_chain(
        instance, home, settings, key, kind, job=REPLAY if replies_from else EVALUATE, tags=tags, outputs=outputs
    )

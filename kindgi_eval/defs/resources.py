"""The Dagster resource that carries a run's settings into the assets, and what a launchpad run may set of them."""

from __future__ import annotations

from collections.abc import Mapping

import dagster as dg
from pydantic import PrivateAttr

from kindgi_eval.defs.registered import suite_settings
from kindgi_eval.inputs import SETTINGS, RunSettings, load_tenants

SETTINGS_TAG = "kindgi/settings"
"""The run's settings as JSON, resolved where it started (the CLI, a schedule or sensor tick): used exactly as they are."""
LAUNCHPAD_FIELDS = tuple(s.field for s in SETTINGS if s.per_tenant)
"""The settings a launchpad may set for a tenant suite's run (a replay sets judge_model); its folders come from the
tenants file, so the suite and tenant folders are not among them."""


class EvalSettings(dg.ConfigurableResource):
    """Agent, judge and tuning of a run started from the launchpad, over its tenant suite's (KINDGI_TENANTS).

    Only what a user sets is config. A run started by the CLI, the schedule or the sensor carries its settings,
    resolved already, in its `kindgi/settings` tag: they are used exactly as they are, nothing set here changes them,
    and nothing is read from the environment again. A re-execution inherits its parent's tags, so its settings too.
    """

    agent_model: str | None = None
    """The agent as provider:model, instead of the tenant's (AGENT_MODEL)."""
    agent_url: str | None = None
    """An agent over HTTP, instead of the tenant's (AGENT_URL)."""
    judge_model: str | None = None
    """The judge as provider:model (EVAL_JUDGE_MODEL); a replay sets it to re-judge with another model."""
    max_latency_ms: float | None = None
    """The agent's deadline per case (EVAL_MAX_LATENCY_MS)."""
    concurrency: int | None = None
    """Model calls in flight at once (EVAL_CONCURRENCY)."""
    model_timeout_s: float | None = None
    """Seconds one model call, agent's or judge's, may take with its retries (EVAL_MODEL_TIMEOUT_S)."""
    replay_from: str | None = None
    """A replay (judge_samples and what follows, the replay_suite job): the run of this suite whose stored suite,
    replies and outcomes are re-judged. Unset: the latest run that had succeeded before this one started."""

    _pinned: RunSettings | None = PrivateAttr(default=None)

    def setup_for_execution(self, context: dg.InitResourceContext) -> None:
        """Read the settings the run was started with, if it carries them."""
        run = context.run
        self._pinned = pinned_settings(run.tags) if run is not None else None

    def for_partition(self, key: str) -> RunSettings:
        """The settings of one partition's run: pinned ones as they are, else its tenant suite's from the tenants file
        with the fields set here over them."""
        if self._pinned is not None:
            return self._pinned
        overrides = {field: getattr(self, field) for field in LAUNCHPAD_FIELDS}
        return suite_settings(load_tenants().suite(key), overrides)

    @classmethod
    def of(cls, settings: RunSettings) -> EvalSettings:
        """A resource pinned to already-resolved settings, as a run carrying them in its tag sets it up."""
        resource = cls()
        resource._pinned = settings
        return resource


def pinned_tags(settings: RunSettings) -> dict[str, str]:
    """The run tag that pins a run to already-resolved settings (the CLI's run, a schedule's or sensor's request)."""
    return {SETTINGS_TAG: settings.model_dump_json()}


def pinned_settings(tags: Mapping[str, str]) -> RunSettings | None:
    """The settings a run's tags pin it to; None for a launchpad run."""
    value = tags.get(SETTINGS_TAG)
    return RunSettings.model_validate_json(value) if value else None

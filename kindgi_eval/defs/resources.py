"""The Dagster resource that carries a run's settings into the assets."""

from __future__ import annotations

import dagster as dg

from kindgi_eval.defs.registered import suite_settings
from kindgi_eval.inputs import SETTINGS, TENANTS_ENV, RunSettings, load_tenants
from kindgi_eval.spec import InputError, Problem

OVERRIDABLE = tuple(s.field for s in SETTINGS if s.per_tenant)
"""Fields a launchpad may set for a tenant suite's run (a replay sets judge_model); its folders come from the tenants file."""


class EvalSettings(dg.ConfigurableResource):
    """Suite, tenant, agent and judge for a run.

    Pinned (the CLI, the schedule and the sensor, through `of`): the fields are the run's settings, resolved
    already, and are used exactly as they are; nothing is read from the environment again. Otherwise (a launchpad run in `dagster dev`): the partition's tenant suite is looked up in the
    tenants file, and a field set here (in the launchpad) overrides that tenant's agent, judge or tuning.
    """

    eval_dir: str | None = None
    """Suite folder (EVAL_DIR)."""
    config_dir: str | None = None
    """Tenant configuration folder (CONFIG_DIR)."""
    agent_model: str | None = None
    """The agent as provider:model (AGENT_MODEL)."""
    agent_url: str | None = None
    """An agent over HTTP (AGENT_URL)."""
    judge_model: str | None = None
    """The judge as provider:model (EVAL_JUDGE_MODEL); a replay sets it to re-judge with another model."""
    max_latency_ms: float | None = None
    """The agent's deadline per case (EVAL_MAX_LATENCY_MS)."""
    concurrency: int | None = None
    """Model calls in flight at once (EVAL_CONCURRENCY)."""
    model_timeout_s: float | None = None
    """Seconds one model call, agent's or judge's, may take with its retries (EVAL_MODEL_TIMEOUT_S)."""

    tenants_file: str | None = None
    """The tenants file declaring every tenant suite (KINDGI_TENANTS); unset: the demo tenant's golden suite."""
    pinned: bool = False
    """True when the settings were resolved already and hold for any partition (the CLI's runs)."""

    def for_partition(self, key: str) -> RunSettings:
        """The settings of one partition's run: pinned ones as they are, else its tenant suite's from the tenants file."""
        if self.pinned:
            return RunSettings(**{s.field: getattr(self, s.field) for s in SETTINGS if getattr(self, s.field) is not None})
        for field in ("eval_dir", "config_dir"):
            if getattr(self, field) is not None:
                raise InputError(
                    [Problem(f"eval_settings.{field}", None, None, f"a tenant suite's folders come from the tenants file "
                             f"({TENANTS_ENV}), so a run of {key} cannot be pointed elsewhere. Leave {field} unset.")]
                )
        overrides = {field: getattr(self, field) for field in OVERRIDABLE}
        return suite_settings(load_tenants(self.tenants_file).suite(key), overrides)

    @classmethod
    def of(cls, settings: RunSettings) -> EvalSettings:
        """A resource pinned to already-resolved settings, as the CLI passes them."""
        return cls(**pinned_config(settings))


def pinned_config(settings: RunSettings) -> dict[str, object]:
    """The resource's config for a run of already-resolved settings (a schedule's or sensor's run request)."""
    return {**settings.model_dump(), "pinned": True}

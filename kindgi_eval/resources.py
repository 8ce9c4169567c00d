"""The Dagster resource that carries a run's settings into the assets."""

from __future__ import annotations

import dagster as dg

from kindgi_eval.errors import InputError, Problem
from kindgi_eval.settings import ENV, RunSettings, resolve_settings
from kindgi_eval.tenants import TENANTS_ENV, load_tenants

OVERRIDABLE = ("agent_model", "agent_url", "judge_model", "max_latency_ms", "concurrency", "model_timeout_s")
"""Fields a launchpad may set for a tenant suite's run (a replay sets judge_model); its folders come from the tenants file."""


class EvalSettings(dg.ConfigurableResource):
    """Suite, tenant, agent and judge for a run.

    Pinned (the CLI, through `of`): every field is the run's, a field left unset falls back to its environment
    variable. Otherwise (`dagster dev`, the schedule, the sensor): the partition's tenant suite is looked up in the
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

    def resolve(self) -> RunSettings:
        """The settings in force: these fields over the environment over the defaults."""
        return resolve_settings({field: getattr(self, field) for field in ENV})

    def for_partition(self, key: str) -> RunSettings:
        """The settings of one partition's run: pinned ones as they are, else its tenant suite's from the tenants file."""
        if self.pinned:
            return self.resolve()
        for field in ("eval_dir", "config_dir"):
            if getattr(self, field) is not None:
                raise InputError(
                    [Problem(f"eval_settings.{field}", None, None, f"a tenant suite's folders come from the tenants file "
                             f"({TENANTS_ENV}), so a run of {key} cannot be pointed elsewhere. Leave {field} unset.")]
                )
        overrides = {field: getattr(self, field) for field in OVERRIDABLE}
        return load_tenants(self.tenants_file).suite(key).settings(overrides)

    @classmethod
    def of(cls, settings: RunSettings) -> EvalSettings:
        """A resource pinned to already-resolved settings, as the CLI passes them."""
        return cls(**settings.model_dump(), pinned=True)

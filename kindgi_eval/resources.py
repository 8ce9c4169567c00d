"""The Dagster resource that carries a run's settings into the assets."""

from __future__ import annotations

import dagster as dg

from kindgi_eval.settings import ENV, RunSettings, resolve_settings


class EvalSettings(dg.ConfigurableResource):
    """Suite, tenant, agent and judge for a run; a field left unset falls back to its environment variable."""

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
    """Seconds one judge call may take (EVAL_MODEL_TIMEOUT_S)."""

    def resolve(self) -> RunSettings:
        """The settings in force: these fields over the environment over the defaults."""
        return resolve_settings({field: getattr(self, field) for field in ENV})

    @classmethod
    def of(cls, settings: RunSettings) -> EvalSettings:
        """A resource pinned to already-resolved settings, as the CLI passes them."""
        return cls(**settings.model_dump())

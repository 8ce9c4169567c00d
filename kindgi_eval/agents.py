"""Choosing the agent a run asks: the offline demo agent, a model, or a service over HTTP."""

from __future__ import annotations

from kindgi_eval.agent import Agent
from kindgi_eval.errors import InputError, Problem
from kindgi_eval.mock_agent import MockAgent
from kindgi_eval.settings import RunSettings
from kindgi_eval.tenant import Tenant


def make_agent(settings: RunSettings, tenant: Tenant) -> Agent:
    """The agent the settings name; InputError when none is named or it cannot be reached from here."""
    if settings.agent_url:
        raise InputError([Problem("AGENT_URL", None, None, "agents over HTTP are not available in this version.")])
    if settings.agent_model is None:
        raise InputError(
            [Problem("AGENT_MODEL", None, None, "no agent named. Set AGENT_MODEL or AGENT_URL, or pass --mock for the offline demo agent.")]
        )
    if settings.agent_model == "mock:agent":
        return MockAgent(tenant)
    raise InputError(
        [Problem("AGENT_MODEL", None, None, f"{settings.agent_model!r}: only mock:agent can answer in this version.")]
    )

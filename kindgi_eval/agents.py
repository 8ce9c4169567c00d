"""Choosing the agent a run asks: the offline demo agent, a model, or a service over HTTP."""

from __future__ import annotations

from kindgi_eval.agent import Agent
from kindgi_eval.errors import InputError, Problem
from kindgi_eval.mock_agent import MockAgent
from kindgi_eval.registry import parse_model
from kindgi_eval.settings import MOCK_AGENT, RunSettings
from kindgi_eval.tenant import Tenant


def make_agent(settings: RunSettings, tenant: Tenant) -> Agent:
    """The agent the settings name: AGENT_URL first, then AGENT_MODEL; InputError when none is named or it is not one.

    The HTTP and model agents are imported only when named, so the offline path never loads httpx or litellm.
    """
    if settings.agent_url:
        from kindgi_eval.http_agent import HttpAgent

        return HttpAgent(settings.agent_url, timeout_s=settings.model_timeout_s)
    if settings.agent_model is None:
        raise InputError(
            [Problem("AGENT_MODEL", None, None, "no agent named. Set AGENT_MODEL or AGENT_URL, or pass --mock for the offline demo agent.")]
        )
    try:
        ref = parse_model(settings.agent_model)
    except ValueError as e:
        raise InputError([Problem("AGENT_MODEL", None, None, str(e))]) from None
    if ref.is_mock:
        if str(ref) == MOCK_AGENT:
            return MockAgent(tenant)
        message = f"{str(ref)!r} is not an offline agent; the offline agent is {MOCK_AGENT}."
        raise InputError([Problem("AGENT_MODEL", None, None, message)])
    from kindgi_eval.litellm_agent import LitellmAgent

    return LitellmAgent(ref, tenant, timeout_s=settings.model_timeout_s)

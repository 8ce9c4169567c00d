"""Choosing the agent a run asks: the offline demo agent, a model, or a service over HTTP."""

from __future__ import annotations

from kindgi_eval.agent import Agent
from kindgi_eval.errors import InputError, Problem
from kindgi_eval.mock_agent import MockAgent
from kindgi_eval.registry import ModelRef, Role, checked_model
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
    ref = model_ref(settings.agent_model, "agent")
    if str(ref) == MOCK_AGENT:
        return MockAgent(tenant)
    from kindgi_eval.litellm_agent import LitellmAgent

    return LitellmAgent(ref, tenant, timeout_s=settings.model_timeout_s)


def judge_ref(settings: RunSettings) -> ModelRef | None:
    """The judge the settings name, checked exactly as the agent's model is; None when there is no judge."""
    return model_ref(settings.judge_model, "judge") if settings.judge_model else None


def model_ref(name: str, role: Role) -> ModelRef:
    """`name` checked for `role`: well formed, an offline model of that role or a provider litellm knows.

    InputError naming the setting's variable. litellm's provider list is consulted only for a real
    provider, whose call imports litellm anyway, so the offline path stays free of it.
    """
    var = "AGENT_MODEL" if role == "agent" else "EVAL_JUDGE_MODEL"
    try:
        ref = checked_model(name, role, known_provider=None)
        if not ref.is_mock:
            from kindgi_eval.models import provider_names

            ref = checked_model(name, role, known_provider=provider_names())
    except ValueError as e:
        raise InputError([Problem(var, None, None, str(e))]) from None
    return ref

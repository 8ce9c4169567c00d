"""Choosing the agent and the judge a run asks, by name: one table of offline names, litellm for the rest.

The built-in offline models are entries of the same tables a new one would join. The HTTP and litellm
modules are imported only when named, so the offline path never loads httpx or litellm.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING

from kindgi_eval.agents.contact import MockContact
from kindgi_eval.agents.demo_judge import DemoJudge
from kindgi_eval.agents.mock import MockAgent, MockJudge
from kindgi_eval.inputs import GATEWAY_KEY, SETTING, RunSettings, variant_settings
from kindgi_eval.rules import Agent, ContactModel, InputError, Judge, ModelRef, Problem, Role, Tenant, checked_model

if TYPE_CHECKING:
    from kindgi_eval.llm import Gateway

OFFLINE_AGENTS: dict[str, Callable[[Tenant], Agent]] = {"mock:agent": MockAgent}
"""Offline agent names and how each is built for a tenant."""
OFFLINE_JUDGES: dict[str, Callable[[], Judge]] = {"mock:judge": MockJudge, "mock:demo-judge": DemoJudge}
"""Offline judge names and how each is built."""
OFFLINE_CONTACTS: dict[str, Callable[[], ContactModel]] = {"mock:contact": MockContact}
"""Offline contact model names and how each is built."""
OFFLINE: dict[Role, list[str]] = {"agent": list(OFFLINE_AGENTS), "judge": list(OFFLINE_JUDGES), "contact": list(OFFLINE_CONTACTS)}


def make_agent(settings: RunSettings, tenant: Tenant, *, check_only: bool = False, named_as: str | None = None) -> Agent:
    """The agent the settings name: AGENT_URL first, then AGENT_MODEL; InputError when none is named or it is not one.

    `check_only`: built only to check the settings, so a litellm agent does not wait for litellm's import.
    `named_as`: how the user gave the model's name (`--agent-model`), for the error; else its variable."""
    if settings.agent_url:
        from kindgi_eval.agents.http import HttpAgent

        return HttpAgent(settings.agent_url, timeout_s=settings.model_timeout_s)
    if settings.agent_model is None:
        raise InputError(
            [Problem("AGENT_MODEL", None, None, "no agent named. Set AGENT_MODEL or AGENT_URL, or pass --mock for the offline demo agent.")]
        )
    ref = model_ref(settings.agent_model, "agent", named_as, gateway=settings.gateway_url is not None)
    if str(ref) in OFFLINE_AGENTS:
        return OFFLINE_AGENTS[str(ref)](tenant)
    from kindgi_eval.agents.litellm import LitellmAgent

    gateway = gateway_of(settings)
    return LitellmAgent(ref, tenant, timeout_s=settings.model_timeout_s, gateway=gateway, prepared=not check_only and gateway is None)


def checked_variants(settings: RunSettings, tenant: Tenant, declared: tuple[str, str], *, mock: bool) -> tuple[str, str]:
    """The agents a pairwise run's variants A and B are answered by: the `declared` ones, or with `mock` (which
    replaces every agent a run calls) the offline demo agent the settings name, for both. Each is checked as
    `make_agent` checks it: InputError when one cannot be made."""
    variants = (settings.agent_model, settings.agent_model) if mock else declared
    for variant in variants:
        make_agent(variant_settings(settings, variant), tenant, check_only=True)
    return variants


def make_judge(settings: RunSettings, *, check_only: bool = False, named_as: str | None = None) -> Judge | None:
    """The judge the settings name, checked exactly as the agent's model is; None when there is no judge.
    `check_only` and `named_as` as for `make_agent`."""
    if settings.judge_model is None:
        return None
    ref = model_ref(settings.judge_model, "judge", named_as, gateway=settings.gateway_url is not None)
    if str(ref) in OFFLINE_JUDGES:
        return OFFLINE_JUDGES[str(ref)]()
    from kindgi_eval.agents.litellm import LitellmJudge

    gateway = gateway_of(settings)
    return LitellmJudge(ref, gateway=gateway, prepared=not check_only and gateway is None)


def make_contact(settings: RunSettings, *, needed: bool, check_only: bool = False, named_as: str | None = None) -> ContactModel | None:
    """The contact model the settings name, checked exactly as the agent's model is; None when there is none. A suite
    with a persona scenario `needed` one: InputError naming the setting when none is named. `check_only` and
    `named_as` as for `make_agent`."""
    if settings.contact_model is None:
        if needed:
            var = SETTING["contact_model"]
            raise InputError([Problem(var.var, None, None, f"is not set, and a scenario has a persona and a goal, which a contact "
                                      f"model plays. Set {var.var} or pass {var.flag} (mock:contact plays one offline), or "
                                      "give the scenario moves instead.")])
        return None
    ref = model_ref(settings.contact_model, "contact", named_as, gateway=settings.gateway_url is not None)
    if str(ref) in OFFLINE_CONTACTS:
        return OFFLINE_CONTACTS[str(ref)]()
    from kindgi_eval.agents.contact import LitellmContact

    gateway = gateway_of(settings)
    return LitellmContact(ref, gateway=gateway, prepared=not check_only and gateway is None)


def gateway_of(settings: RunSettings) -> Gateway | None:
    """The LiteLLM gateway the settings send model calls to, with its key from `KINDGI_GATEWAY_KEY`; None without one."""
    if settings.gateway_url is None:
        return None
    from kindgi_eval.llm import Gateway

    return Gateway(settings.gateway_url, os.environ.get(GATEWAY_KEY) or None)


def model_ref(name: str, role: Role, named_as: str | None = None, *, gateway: bool = False) -> ModelRef:
    """`name` checked for `role`: well formed, an offline model of that role or a provider litellm knows.

    InputError naming `named_as` (what the user gave the name as: `--judge-model`), else the setting's variable. litellm's provider list is consulted only for a real
    provider, whose call imports litellm anyway, so the offline path stays free of it. With a `gateway` the provider
    and its key are the gateway's to know: any well-formed name is taken, and no provider key is asked for here.
    """
    var = named_as or SETTING[f"{role}_model"].var
    try:
        ref = checked_model(name, role, offline=OFFLINE, known_provider=None)
        if not ref.is_mock and not gateway:
            from kindgi_eval.llm import WELL_KNOWN_PROVIDERS, provider_names

            if ref.provider not in WELL_KNOWN_PROVIDERS:
                ref = checked_model(name, role, offline=OFFLINE, known_provider=provider_names())
    except ValueError as e:
        raise InputError([Problem(var, None, None, str(e))]) from None
    if not ref.is_mock and not gateway:
        from kindgi_eval.llm import missing_credentials

        needed = missing_credentials(ref.provider, os.environ)  # litellm's own variables, read where it reads them
        if needed:
            raise InputError([Problem(var, None, None, f"{name} needs its key in {' or '.join(needed)}, which is not set: "
                                      f"every call would be refused. Set {needed[0]}, or name another {role}.")])
    return ref

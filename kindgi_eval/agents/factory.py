"""Choosing the agent and the judge a run asks, by name: one table of offline names, litellm for the rest.

The built-in offline models are entries of the same tables a new one would join. The HTTP and litellm
modules are imported only when named, so the offline path never loads httpx or litellm.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from kindgi_eval.agents.contact import MockContact
from kindgi_eval.agents.demo_judge import DemoJudge
from kindgi_eval.agents.mock import MockAgent, MockJudge
from kindgi_eval.inputs import (
    GATEWAY_KEY,
    SETTING,
    RunSettings,
    deployment_agent_url,
    deployment_gateway,
    variant_settings,
)
from kindgi_eval.rules import Agent, ContactModel, InputError, Judge, ModelRef, Problem, Role, Tenant, checked_model

if TYPE_CHECKING:
    from kindgi_eval.llm import Gateway

GATEWAY_URL = SETTING["gateway_url"].var
"""The variable naming the deployment's gateway: the one URL the gateway's key is ever sent to."""

OFFLINE_AGENTS: dict[str, Callable[[Tenant], Agent]] = {"mock:agent": MockAgent}
"""Offline agent names and how each is built for a tenant."""
OFFLINE_JUDGES: dict[str, Callable[[], Judge]] = {"mock:judge": MockJudge, "mock:demo-judge": DemoJudge}
"""Offline judge names and how each is built."""
OFFLINE_CONTACTS: dict[str, Callable[[], ContactModel]] = {"mock:contact": MockContact}
"""Offline contact model names and how each is built."""
OFFLINE: dict[Role, list[str]] = {
    "agent": list(OFFLINE_AGENTS),
    "judge": list(OFFLINE_JUDGES),
    "contact": list(OFFLINE_CONTACTS),
}


AGENT_HEADERS = "AGENT_HEADERS"
"""The variable holding the HTTP agent's request headers (credentials, say) as a JSON object of text values."""


def agent_headers(url: str, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The headers `AGENT_HEADERS` gives the HTTP agent at `url`: only when `url` is the `AGENT_URL` of that same
    environment, so they never go to a URL a run's tags, a launchpad or a tenants file named; InputError naming the
    variable (never its value) when it is not a JSON object of text values."""
    environ = os.environ if environ is None else environ
    text = environ.get(AGENT_HEADERS, "")
    if not text or deployment_agent_url(environ) != url:
        return {}
    try:
        headers = json.loads(text)
    except ValueError:
        headers = None
    if not isinstance(headers, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in headers.items()):
        raise InputError(
            [
                Problem(
                    AGENT_HEADERS,
                    None,
                    None,
                    'is not a JSON object of text values. Write it as {"Authorization": "Bearer ..."}.',
                )
            ]
        )
    return headers


def make_agent(
    settings: RunSettings, tenant: Tenant, *, check_only: bool = False, named_as: str | None = None
) -> Agent:
    """The agent the settings name: AGENT_URL first, then AGENT_MODEL; InputError when none is named or it is not one.

    `check_only`: built only to check the settings, so a litellm agent does not wait for litellm's import.
    `named_as`: how the user gave the model's name (`--agent-model`), for the error; else its variable."""
    if settings.agent_url:
        from kindgi_eval.agents.http import HttpAgent

        return HttpAgent(
            settings.agent_url, timeout_s=settings.model_timeout_s, headers=agent_headers(settings.agent_url)
        )
    if settings.agent_model is None:
        raise InputError(
            [
                Problem(
                    "AGENT_MODEL",
                    None,
                    None,
                    "no agent named. Set AGENT_MODEL or AGENT_URL, or pass --mock for the offline demo agent.",
                )
            ]
        )
    ref = model_ref(settings.agent_model, "agent", named_as, gateway=settings.gateway_url is not None)
    if str(ref) in OFFLINE_AGENTS:
        return OFFLINE_AGENTS[str(ref)](tenant)
    from kindgi_eval.agents.litellm import LitellmAgent

    gateway = gateway_of(settings)
    return LitellmAgent(
        ref, tenant, timeout_s=settings.model_timeout_s, gateway=gateway, prepared=not check_only and gateway is None
    )


def checked_variants(
    settings: RunSettings, tenant: Tenant, declared: tuple[str, str], *, mock: bool
) -> tuple[str, str]:
    """The agents a pairwise run's variants A and B are answered by: the `declared` ones, or with `mock` (which
    replaces every agent a run calls) the offline demo agent the settings name, for both. Each is checked as
    `make_agent` checks it: InputError when one cannot be made."""
    variants = (settings.agent_model, settings.agent_model) if mock else declared
    for variant in variants:
        make_agent(variant_settings(settings, variant), tenant, check_only=True)
    return variants


def make_judge(settings: RunSettings, *, check_only: bool = False, named_as: str | None = None) -> Judge | None:
    """The judge the settings name, checked exactly as the agent's model is; None when there is no judge.
    `check_only` and `named_as` as for `make_agent`. With `judge_batch`, a judge whose provider litellm sends no batch
    to (`llm.BATCH_PROVIDERS`), and no gateway, is an InputError: its samples would all be invalid."""
    if settings.judge_model is None:
        return None
    ref = model_ref(settings.judge_model, "judge", named_as, gateway=settings.gateway_url is not None)
    if str(ref) in OFFLINE_JUDGES:
        return OFFLINE_JUDGES[str(ref)]()
    from kindgi_eval.agents.litellm import LitellmJudge

    gateway = gateway_of(settings)
    if settings.judge_batch and gateway is None:
        from kindgi_eval.llm import BATCH_PROVIDERS

        if ref.provider not in BATCH_PROVIDERS:
            raise InputError(
                [
                    Problem(
                        SETTING["judge_batch"].var,
                        None,
                        None,
                        f"{ref} has no batch API that litellm sends batches to (it does for {', '.join(sorted(BATCH_PROVIDERS))}). "
                        "Turn the judge's batch off for this judge, or send the run's calls through a gateway (KINDGI_GATEWAY_URL).",
                    )
                ]
            )
    return LitellmJudge(ref, gateway=gateway, prepared=not check_only and gateway is None)


def make_contact(
    settings: RunSettings, *, needed: bool, check_only: bool = False, named_as: str | None = None
) -> ContactModel | None:
    """The contact model the settings name, checked exactly as the agent's model is; None when there is none. A suite
    with a persona scenario `needed` one: InputError naming the setting when none is named. `check_only` and
    `named_as` as for `make_agent`."""
    if settings.contact_model is None:
        if needed:
            var = SETTING["contact_model"]
            raise InputError(
                [
                    Problem(
                        var.var,
                        None,
                        None,
                        f"is not set, and a scenario has a persona and a goal, which a contact "
                        f"model plays. Set {var.var} or pass {var.flag} (mock:contact plays one offline), or "
                        "give the scenario moves instead.",
                    )
                ]
            )
        return None
    ref = model_ref(settings.contact_model, "contact", named_as, gateway=settings.gateway_url is not None)
    if str(ref) in OFFLINE_CONTACTS:
        return OFFLINE_CONTACTS[str(ref)]()
    from kindgi_eval.agents.contact import LitellmContact

    gateway = gateway_of(settings)
    return LitellmContact(ref, gateway=gateway, prepared=not check_only and gateway is None)


def gateway_of(settings: RunSettings, environ: Mapping[str, str] | None = None) -> Gateway | None:
    """The LiteLLM gateway the settings send model calls to, None without one: the deployment's gateway, with the key
    beside its URL in this process's environment (`KINDGI_GATEWAY_URL`, `KINDGI_GATEWAY_KEY`). The key is bound to that
    URL where it is read: InputError, sending nothing, when the settings name any other."""
    if settings.gateway_url is None:
        return None
    environ = os.environ if environ is None else environ
    configured = deployment_gateway(environ)
    if settings.gateway_url != configured:
        raise InputError([foreign_gateway(settings.gateway_url, configured)])
    from kindgi_eval.llm import Gateway

    return Gateway(configured, environ.get(GATEWAY_KEY) or None)


def deployment_settings(settings: RunSettings, environ: Mapping[str, str] | None = None) -> RunSettings:
    """`settings` as this deployment runs them: their model calls go to the gateway this process's environment names
    (`KINDGI_GATEWAY_URL`), whatever gateway the settings came with. Settings that name none are given the deployment's;
    settings that name another (a run's tag, written by hand in the UI) are refused with InputError before any call."""
    configured = deployment_gateway(environ)
    if settings.gateway_url not in (None, configured):
        raise InputError([foreign_gateway(settings.gateway_url, configured)])
    return settings if settings.gateway_url == configured else settings.model_copy(update={"gateway_url": configured})


def foreign_gateway(named: str, configured: str | None) -> Problem:
    """The problem of a run naming a gateway that is not the deployment's: where its model calls go, and with which
    key, is the deployment's alone."""
    deployment = f"this deployment's gateway is {configured}" if configured else "this deployment names no gateway"
    return Problem(
        GATEWAY_URL,
        None,
        None,
        f"the run names the gateway {named}, and {deployment}: a run's model calls "
        f"go only to the gateway {GATEWAY_URL} names where the run executes, with its key, so nothing was "
        "sent. Leave gateway_url out of the run's settings (its kindgi/settings tag), or set "
        f"{GATEWAY_URL} where it runs.",
    )


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
            raise InputError(
                [
                    Problem(
                        var,
                        None,
                        None,
                        f"{name} needs its key in {' or '.join(needed)}, which is not set: "
                        f"every call would be refused. Set {needed[0]}, or name another {role}.",
                    )
                ]
            )
    return ref

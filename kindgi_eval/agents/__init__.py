"""Everything that answers a turn: the agent a run's settings name (offline ones by table), the mock, litellm and HTTP agents, the guardrails, the custom handlers' sandbox. Imports rules, llm, prompts, inputs."""

from kindgi_eval.agents.factory import checked_variants, deployment_settings, make_agent, make_contact, make_judge
from kindgi_eval.agents.sandbox import Sandbox, make_sandbox

__all__ = [
    "Sandbox",
    "checked_variants",
    "deployment_settings",
    "make_agent",
    "make_contact",
    "make_judge",
    "make_sandbox",
]

"""Everything that answers a turn: the name-to-agent table, the mock, litellm and HTTP agents, the guardrails. Imports spec, llm, prompts, inputs."""

from kindgi_eval.agents.factory import make_agent, make_judge

__all__ = ["make_agent", "make_judge"]

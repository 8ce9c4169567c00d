"""The litellm agent and judge: a real model behind the tenant's prompt and guardrails, and a real model as judge."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from kindgi_eval.agents.guardrails import GuardrailBreach, escalation_reply, guard, triggered_escalation
from kindgi_eval.inputs import DEFAULT_MODEL_TIMEOUT_S
from kindgi_eval.llm import DEFAULT_POLICY, CallPolicy, Gateway, ModelClient, run_batch
from kindgi_eval.prompts import UnreadableReply, agent_messages, read_reply, tenant_rules
from kindgi_eval.rules import AgentAnswer, AgentTurn, Completion, ModelRef, ReplyError, Tenant, Usage

JSON_OBJECT = {"type": "json_object"}
"""Asks providers that support it for a JSON object; litellm drops it for those that do not."""


class LitellmAgent(ModelClient):
    """A sales agent for one tenant, answered by a model through litellm and held by deterministic guardrails."""

    role = "agent"

    def __init__(
        self,
        ref: ModelRef,
        tenant: Tenant,
        *,
        timeout_s: float = DEFAULT_MODEL_TIMEOUT_S,
        policy: CallPolicy = DEFAULT_POLICY,
        gateway: Gateway | None = None,
        prepared: bool = True,
    ):
        super().__init__(ref, policy=policy, gateway=gateway, prepared=prepared)
        self.tenant = tenant
        self.timeout_s = timeout_s
        self._rules = tenant_rules(tenant)  # the same on every turn: built once

    async def answer(self, turn: AgentTurn) -> AgentAnswer:
        """Answer one turn; ReplyError (raw output kept) when the model's answer cannot be sent."""
        if (rule := triggered_escalation(self.tenant, turn)) is not None:
            # The hand-over is decided before the model is asked, so nothing in the message can argue it away.
            return AgentAnswer(reply=escalation_reply(rule), usage=Usage())
        completion = await self.ask(
            agent_messages(self.tenant, turn, self._rules),
            timeout_s=self.timeout_s,
            response_format=JSON_OBJECT,
            drop_params=True,
        )
        try:
            reply = guard(self.tenant, turn, read_reply(completion.content))
        except (UnreadableReply, GuardrailBreach) as e:
            raise ReplyError(str(e), raw=completion.content, usage=completion.usage) from None
        return AgentAnswer(reply=reply, usage=completion.usage)


class LitellmJudge(ModelClient):
    """A judge answered by a model through litellm (`EVAL_JUDGE_MODEL=provider:model`)."""

    role = "judge"

    async def grade(
        self, messages: list[dict[str, Any]], *, timeout_s: float, schema: dict | None = None
    ) -> Completion:
        """One answer to one judge request, retried and timed as every model call is; `schema` is sent as the
        response format where litellm says the model supports response schemas, and the prompt alone asks otherwise."""
        return await self.ask(messages, timeout_s=timeout_s, schema=schema)

    async def grade_batch(
        self,
        requests: Mapping[str, list[dict[str, Any]]],
        *,
        schema: dict | None,
        sent: str | None,
        remember: Callable[[str], None],
        poll_s: float,
    ) -> dict[str, Completion | str]:
        """Each request's answer, or the error that stands in for it, through the provider's batch API (`llm.batch`):
        the batch `sent` where a killed attempt created one, else a new one whose id goes to `remember`."""
        return await run_batch(
            self.ref, requests, gateway=self.gateway, schema=schema, sent=sent, remember=remember, poll_s=poll_s
        )

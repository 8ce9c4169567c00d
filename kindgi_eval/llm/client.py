"""One model as the product's roles hold it: its name, its call policy and where its calls go."""

from __future__ import annotations

from typing import Any

from kindgi_eval.llm.calls import DEFAULT_POLICY, CallPolicy, complete, prepare
from kindgi_eval.llm.gateway import Gateway
from kindgi_eval.rules import Completion, ModelRef, ModelRole


class ModelClient:
    """A model the agent, the judge or the contact asks: every call retried, timed and logged as one of `role`."""

    role: ModelRole
    """Which part of a run the calls are, in the call log."""

    def __init__(
        self,
        ref: ModelRef,
        *,
        policy: CallPolicy = DEFAULT_POLICY,
        gateway: Gateway | None = None,
        prepared: bool = True,
    ):
        self.ref = ref
        self.policy = policy
        self.gateway = gateway
        """Where the calls go instead of litellm, if anywhere."""
        self.name = str(ref)
        if prepared:  # litellm's import takes seconds: paid here, never inside a call's timeout
            prepare()

    async def ask(self, messages: list[dict[str, Any]], *, timeout_s: float, **params: Any) -> Completion:
        """One answer to `messages` within `timeout_s`; `params` go to `llm.complete` as they are."""
        return await complete(
            self.ref, messages, timeout_s=timeout_s, role=self.role, policy=self.policy, gateway=self.gateway, **params
        )

"""The contact models that play a persona scenario's contact: the offline `mock:contact`, and any model through
litellm. Each is asked with the request `prompts.contact_messages` writes and answers as a model would; what it
answers is read as untrusted input (`rules.read_contact_reply`)."""

from __future__ import annotations

import json

from kindgi_eval.llm import ModelClient
from kindgi_eval.prompts import unfence
from kindgi_eval.rules import Completion, Usage

JSON_OBJECT = {"type": "json_object"}
"""Asks providers that support it for a JSON object; litellm drops it for those that do not."""

REPERTOIRE = (
    "How much does it cost?",
    "That's more than I wanted to spend.",
    "Is there any discount you could do for me?",
    "OK, thanks. I'll think about it.",
)
"""What `mock:contact` says after its opening message, in turn; then it is done."""


class MockContact:
    """The offline contact model (`mock:contact`): opens with the scenario's goal in its own words, then plays a small
    fixed repertoire (the price, an objection, a discount, a goodbye) and is done. Deterministic, free and instant:
    enough for the demo and the tests, never a stand-in for a real contact's variety. It reads its request from the
    fences around the material, as a model would; nothing in the material instructs it."""

    name = "mock:contact"

    async def write(self, messages: list[dict[str, str]], *, timeout_s: float) -> Completion:
        """The next message of the repertoire for the conversation the request shows."""
        request = messages[-1]["content"]
        history = unfence(request, "history") or ""
        said = sum(line.startswith("contact: ") for line in history.split("\n"))
        if said == 0:
            answer = {"message": f"Hi! {(unfence(request, 'goal') or '').strip()}", "done": False}
        elif said <= len(REPERTOIRE):
            answer = {"message": REPERTOIRE[said - 1], "done": False}
        else:
            answer = {"message": "", "done": True}
        return Completion(json.dumps(answer), Usage(cost_usd=0.0, cost_known=True), 0.0)


class LitellmContact(ModelClient):
    """A contact model answered through litellm (`EVAL_CONTACT_MODEL=provider:model`), or through the gateway."""

    role = "contact"

    async def write(self, messages: list[dict[str, str]], *, timeout_s: float) -> Completion:
        """One answer, retried and timed as every model call is, asked for as a JSON object."""
        return await self.ask(messages, timeout_s=timeout_s, response_format=JSON_OBJECT, drop_params=True)

"""The agent seam: one turn in, one reply out; every kind of agent answers through this protocol."""

from __future__ import annotations

from typing import Any, NamedTuple, Protocol

from pydantic import BaseModel, ConfigDict, Field

from kindgi_eval.rules.cases import Contact, Turn


class AgentTurn(BaseModel):
    """What the agent is given for one case: the conversation so far and the contact's message."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tenant: str
    """The tenant whose agent answers."""
    case_id: str
    """The case under test, for the agent's own logs."""
    text: str
    """The contact's message; empty on a nudge."""
    history: tuple[Turn, ...] = ()
    """Earlier turns, oldest first."""
    contact: Contact | None = None
    """What is known about the contact, or None for a new contact."""
    nudge: bool = False
    """A follow-up turn: no contact wrote anything."""


class AgentReply(BaseModel):
    """What the agent answered: the chat bubbles it sends and whether it hands over to a person."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    messages: tuple[str, ...]
    """The messages, in the order they land in the chat."""
    escalate: bool
    """True when the conversation is handed to a person."""
    reason: str | None = None
    """The escalation reason, when escalating."""


CACHE_BREAKS = "cache_breaks"
"""The key of a request's message under which a prompt lists the offsets in its content where a prefix ends that the
run's other requests repeat (the catalogue, a conversation): where a provider that caches only at a marked breakpoint
gets one. It is never sent as it is: the model call turns it into the provider's own marks, or drops it."""


class Usage(BaseModel):
    """What a model call cost: tokens and dollars; cost is 0 and flagged when the price is unknown."""

    model_config = ConfigDict(frozen=True)

    prompt_tokens: int = 0
    """Tokens sent."""
    completion_tokens: int = 0
    """Tokens received."""
    cached_tokens: int = 0
    """Of the tokens sent, those the provider read from its cache of a repeated prefix (billed at its cached price)."""
    cost_usd: float = 0.0
    """Dollars, as litellm prices the model; 0 when unknown."""
    cost_known: bool = True
    """False when the model's price is not known, so the cost shown is not the cost paid; also when tokens were read
    from the cache of a model whose cached price is not known, which are then priced at its full input price."""


class AgentAnswer(BaseModel):
    """A reply together with what it cost."""

    model_config = ConfigDict(frozen=True)

    reply: AgentReply
    """The reply itself."""
    usage: Usage = Field(default_factory=Usage)
    """Tokens and cost of producing it."""


class Completion(NamedTuple):
    """A model's answer: its text, what it cost and how long the call took, retries included."""

    content: str | None
    """The answer's text, or None when it had none."""
    usage: Usage
    """Tokens and cost."""
    latency_ms: float
    """How long the call took, retries included."""


class Agent(Protocol):
    """Anything that answers a turn: the offline demo agent, a model through litellm, a service over HTTP."""

    name: str
    """How runs record this agent: `provider:model` or the URL."""

    async def answer(self, turn: AgentTurn) -> AgentAnswer:
        """Answer one turn; raise on failure, and the caller records the error against the case."""
        ...


class Judge(Protocol):
    """Anything that answers a judge's request: the offline mock judge, or a model through litellm."""

    name: str
    """How runs record this judge: `provider:model`."""

    async def grade(
        self, messages: list[dict[str, Any]], *, timeout_s: float, schema: dict | None = None
    ) -> Completion:
        """One answer to one judge request; raise on failure, and the caller records an invalid sample. `schema` is
        the shape the answer must have (a response schema, `VERDICT_SCHEMA`), for a judge that can ask for it."""
        ...


class ContactModel(Protocol):
    """Anything that plays a persona scenario's contact: the offline `mock:contact`, or a model through litellm."""

    name: str
    """How runs record the contact model: `provider:model`."""

    async def write(self, messages: list[dict[str, str]], *, timeout_s: float) -> Completion:
        """One answer to one request for the contact's next message; raise on failure."""
        ...


class ReplyError(Exception):
    """The agent answered, but not with a reply that can be used; the case fails with this as its error.

    `raw` is what the agent actually sent (a model's output, an HTTP body), kept for the person reading the
    failure; `usage` is what producing it cost, which was paid all the same.
    """

    def __init__(self, message: str, *, raw: str | None = None, usage: Usage | None = None):
        super().__init__(message)
        self.raw = raw
        self.usage = usage or Usage()

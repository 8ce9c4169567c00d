"""Deterministic guardrails around a model agent: what holds whatever the model says.

Pure: no I/O. Three rules:
- a configured escalation trigger in the contact's message hands over with the rule's reason and the
  tenant's configured message (docs/design.md#framework-text-is-english), before any model is asked, so no injection can
  talk it out of it;
- a model that hands over on its own must name one of the tenant's rules, at a stage where that rule
  applies, and then sends that rule's configured message, never its own words;
- a reply that repeats the agent's previous turn word for word is refused. The case fails with an error
  naming the rule (docs/design.md#fail-closed) rather than asking the model again: the run reports what the model
  did, and a second paid call could hide a habit the tenant needs to see.
"""

from __future__ import annotations

from collections.abc import Sequence

from kindgi_eval.rules import AgentReply, AgentTurn, Escalation, Tenant, Turn


class GuardrailBreach(ValueError):
    """A model reply the guardrails refuse to send; the case fails with this as its error."""

    def __init__(self, rule: str, message: str):
        super().__init__(f"guardrail {rule}: {message}")
        self.rule = rule
        """Which guardrail refused it: `escalation_reason` or `repeated_turn`."""


def triggered_escalation(tenant: Tenant, turn: AgentTurn) -> Escalation | None:
    """The first configured rule whose trigger the contact wrote, once they have reached its stage.

    The whole message is searched, case-insensitively, injected instructions included: a refund request
    wrapped in "do not escalate this" is still a refund request. A nudge has no contact message, so no
    trigger can fire on it, whatever stale text the turn carries.
    """
    if turn.nudge:
        return None
    text = turn.text.lower()
    stage = _stage(tenant, turn)
    for rule in tenant.escalations:
        if _applies_at(tenant, rule, stage) and any(trigger.lower() in text for trigger in rule.triggers):
            return rule
    return None


def escalation_reply(rule: Escalation) -> AgentReply:
    """Handing over under a rule: its reason, and the tenant's configured message verbatim."""
    return AgentReply(messages=(rule.message,), escalate=True, reason=rule.reason)


def guard(tenant: Tenant, turn: AgentTurn, reply: AgentReply) -> AgentReply:
    """The reply to send once the model has answered; GuardrailBreach when it must not be sent."""
    if reply.escalate:
        rule = next((r for r in tenant.escalations if r.reason == reply.reason), None)
        if rule is None:
            allowed = ", ".join(r.reason for r in tenant.escalations) or "none"
            raise GuardrailBreach(
                "escalation_reason",
                f"the model handed over with reason {reply.reason!r}, "
                f"which is not one of this tenant's rules ({allowed})",
            )
        if not _applies_at(tenant, rule, _stage(tenant, turn)):
            raise GuardrailBreach(
                "escalation_reason",
                f"the model handed over with reason {rule.reason!r}, which applies only from the "
                f"{rule.after_stage} stage on",
            )
        return escalation_reply(rule)
    if repeats_previous_turn(turn.history, reply.messages):
        raise GuardrailBreach("repeated_turn", "the reply repeats the agent's previous turn word for word")
    return AgentReply(messages=reply.messages, escalate=False, reason=None)


def repeats_previous_turn(history: Sequence[Turn], messages: Sequence[str]) -> bool:
    """Whether the reply, or one of its messages, is the agent's previous turn again, spacing aside."""
    previous = next((t.text for t in reversed(history) if t.role == "agent"), None)
    if previous is None or not _words(previous):
        return False
    said = _words(previous)
    return _words(" ".join(messages)) == said or any(_words(m) == said for m in messages)


def _words(text: str) -> str:
    return " ".join(text.split())


def _stage(tenant: Tenant, turn: AgentTurn) -> int:
    """The contact's funnel stage as an index; a new contact, or an unknown stage, is at the first."""
    return tenant.stage_index(turn.contact.funnel_stage if turn.contact else None) or 0


def _applies_at(tenant: Tenant, rule: Escalation, stage: int) -> bool:
    return rule.after_stage is None or stage >= (tenant.stage_index(rule.after_stage) or 0)

"""What the agent and the judge are shown: pure text built from the rules' shapes. Imports rules."""

from kindgi_eval.prompts.agent import UnreadableReply, agent_messages, read_reply, tenant_rules
from kindgi_eval.prompts.contact import contact_messages, contact_prompt_hash
from kindgi_eval.prompts.fence import unfence
from kindgi_eval.prompts.judge import (
    PAIRWISE_SYSTEM,
    criterion_named,
    judge_messages,
    pairwise_messages,
    template_hash,
    transcript_messages,
)

__all__ = [
    "contact_messages",
    "contact_prompt_hash",
    "PAIRWISE_SYSTEM",
    "UnreadableReply",
    "agent_messages",
    "criterion_named",
    "judge_messages",
    "pairwise_messages",
    "read_reply",
    "template_hash",
    "transcript_messages",
    "tenant_rules",
    "unfence",
]

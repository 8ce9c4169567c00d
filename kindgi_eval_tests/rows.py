"""Stored rows the tests build by hand, with the fields a test does not care about filled in once."""

from __future__ import annotations

from collections.abc import Sequence

from kindgi_eval.store import ReplyRow, RunRow


def reply_row(case_id: str, messages: Sequence[str] = ("hi",), error: str | None = None) -> ReplyRow:
    """The mock agent's reply to `case_id`: `messages`, no escalation and no cost; with `error`, no reply at all."""
    return ReplyRow(
        case_id=case_id,
        agent="mock:agent",
        messages=[] if error else list(messages),
        escalate=None if error else False,
        reason=None,
        latency_ms=1.0,
        prompt_tokens=0,
        completion_tokens=0,
        cost_usd=0.0,
        cost_known=True,
        error=error,
        raw=None,
    )


def run_row(**changes: object) -> RunRow:
    """A finished run of one passing case on the mock agent, without a judge; `changes` set any field."""
    fields = dict(
        tenant="demo-academy",
        eval_dir="evals/golden",
        suite_hash="s" * 64,
        config_hash="c" * 64,
        agent="mock:agent",
        judge=None,
        judge_prompt_hash=None,
        code_version="0+test",
        replies_from="",
        started_at="2026-10-01T02:00:00+00:00",
        finished_at="2026-10-01T02:00:05+00:00",
        cases=1,
        passed=1,
        failed=0,
        judged_fail=0,
        judged_pass=0,
        reviewed=0,
        ungraded=0,
        agent_usd=0.0,
        judge_usd=0.0,
        cost_unknown=False,
        stages=["opening"],
        uncovered=[],
    )
    return RunRow(**{**fields, **changes})

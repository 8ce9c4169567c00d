"""The `pairwise` kind: two agent variants answer the same prompts and a calibrated judge compares them in both orders."""

from collections.abc import Mapping

from kindgi_eval.kinds.kind import KindRows, SuiteKind
from kindgi_eval.kinds.pairwise.report import both_variants, pairwise_lines, pairwise_summary_json
from kindgi_eval.kinds.pairwise.stage import agreement_of, judge_pairwise, pair_key, pairwise_askings, pairwise_columns
from kindgi_eval.rules import AgentReply, AssertionResult, PairwiseCase, agent_failure


def _answered(case: PairwiseCase, reply: AgentReply | None, *, error: str | None, latency_ms: float,
              max_latency_ms: float) -> list[AssertionResult]:
    """Nothing is asserted of a prompt's reply, which the judge compares with the other variant's; only a reply
    that never came fails."""
    return [agent_failure(error)] if reply is None else []


def _columns(rows: KindRows) -> Mapping[str, object]:
    return pairwise_columns(rows.suite[0], rows.pairwise)


KIND = SuiteKind(name="pairwise", case_model=PairwiseCase, enters_funnel=False, groups=(), judged_by_case=False,
                 assertions=_answered, askings=pairwise_askings, columns=_columns,
                 lines=pairwise_lines, summary=pairwise_summary_json, against=both_variants)

__all__ = ["KIND", "agreement_of", "judge_pairwise", "pair_key", "pairwise_columns"]

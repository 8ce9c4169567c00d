"""The `pairwise` kind: two agent variants answer the same prompts and a calibrated judge compares them in both orders."""

from kindgi_eval.kinds.kind import KindRows, SuiteKind
from kindgi_eval.kinds.pairwise.report import both_variants, pairwise_lines, pairwise_summary_json
from kindgi_eval.kinds.pairwise.stage import agreement_of, judge_pairwise, pair_key, pairwise_askings, pairwise_metrics, pairwise_params
from kindgi_eval.store import FigureColumn, MetricRow
from kindgi_eval.rules import AgentReply, AssertionResult, PairwiseCase, agent_failure


def _answered(case: PairwiseCase, reply: AgentReply | None, *, error: str | None, latency_ms: float,
              max_latency_ms: float) -> list[AssertionResult]:
    """Nothing is asserted of a prompt's reply, which the judge compares with the other variant's; only a reply
    that never came fails."""
    return [agent_failure(error)] if reply is None else []


def _metrics(rows: KindRows) -> list[MetricRow]:
    return pairwise_metrics(rows.pairwise)


FIGURES = (
    FigureColumn("variant_a", "VARCHAR"),
    FigureColumn("variant_b", "VARCHAR"),
    FigureColumn("pairwise_calibrated", "BOOLEAN", "pairwise_calibrated"),
    FigureColumn("pairwise_agreement", "DOUBLE", "pairwise_agreement"),
    FigureColumn("wins", "BIGINT", "wins"),
    FigureColumn("losses", "BIGINT", "losses"),
    FigureColumn("ties", "BIGINT", "ties"),
    FigureColumn("win_rate", "DOUBLE", "win_rate"),
    FigureColumn("win_rate_low", "DOUBLE", "win_rate", "low"),
    FigureColumn("win_rate_high", "DOUBLE", "win_rate", "high"),
    FigureColumn("position_consistency", "DOUBLE", "position_consistency"),
)


KIND = SuiteKind(name="pairwise", case_model=PairwiseCase, enters_funnel=False, groups=(), judged_by_case=False,
                 assertions=_answered, askings=pairwise_askings, metrics=_metrics, params=pairwise_params, figures=FIGURES,
                 lines=pairwise_lines, summary=pairwise_summary_json, against=both_variants)

__all__ = ["KIND", "agreement_of", "judge_pairwise", "pair_key", "pairwise_metrics"]

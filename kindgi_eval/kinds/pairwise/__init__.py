"""The `pairwise` kind: two agent variants answer the same prompts and a calibrated judge compares them in both orders."""

from collections.abc import Sequence
from pathlib import Path

from kindgi_eval.agents import checked_variants
from kindgi_eval.inputs import RegisteredAs, declared_variant
from kindgi_eval.kinds.kind import (
    JUDGE_USD,
    Checking,
    KindRows,
    Pinning,
    Pins,
    Reading,
    Reporting,
    RunStart,
    Stage,
    StageInputs,
    SuiteKind,
    published_starter,
)
from kindgi_eval.kinds.pairwise.check import CONSUMER, registered_variant
from kindgi_eval.kinds.pairwise.report import both_variants, pairwise_lines, pairwise_summary_json
from kindgi_eval.kinds.pairwise.stage import (
    PairwiseRow,
    agreement_of,
    judge_cost,
    judge_pairwise,
    pair_key,
    pairwise_askings,
    pairwise_metrics,
    pairwise_params,
    pairwise_stored,
)
from kindgi_eval.kinds.table import cases_of
from kindgi_eval.rules import AgentReply, AssertionResult, PairwiseCalibration, PairwiseCase, agent_failure
from kindgi_eval.store import FigureColumn, MetricRow


def _answered(
    case: PairwiseCase, reply: AgentReply | None, *, error: str | None, latency_ms: float, max_latency_ms: float
) -> list[AssertionResult]:
    """Nothing is asserted of a prompt's reply, which the judge compares with the other variant's; only a reply
    that never came fails."""
    return [agent_failure(error)] if reply is None else []


def _metrics(rows: KindRows) -> list[MetricRow]:
    return pairwise_metrics(rows.own)


def _judged(given: StageInputs) -> list[PairwiseRow]:
    """Each prompt of a pairwise suite judged in both orders (A first, then B first), and each hand-labelled pair
    that calibrates the judge; empty for other kinds and without a judge.

    A variant wins a prompt only when it wins in both orders. The metadata holds variant A's win rate and its
    bootstrap 95% interval and the position consistency as numbers, so they plot night over night.
    Each judged pair is recorded as it arrives, so a killed run resumed judges only the pairs it had not.
    Query: `kindgi-eval sql "SELECT subject_id, ab, ba, outcome, consistent, reason_ab FROM pairwise WHERE subject = 'prompt'"`.
    """
    return [] if given.judged is None else given.judged(judge_pairwise, cases_of(given.suite), given.statuses)


def _about(rows: Sequence[PairwiseRow]) -> dict[str, object]:
    return {"calibration_note": agreement_of(rows).note, JUDGE_USD: judge_cost(rows)}


def _declared_variants(registered: RegisteredAs, tenant: str) -> tuple[str, str]:
    """The agents (model or URL) a pairwise suite's variants A and B name, as the tenants file declares them."""
    where = f"suite {registered.suite_id} {registered.suite_version}"
    return (
        declared_variant(tenant, *registered_variant(registered, "a"), f"{where}: spec.variantA"),
        declared_variant(tenant, *registered_variant(registered, "b"), f"{where}: spec.variantB"),
    )


def _pins(p: Pinning) -> Pins:
    """The agents variants A and B are, as the tenants file declares them; from the command line, each checked
    (and with --mock, both the demo agent)."""
    if p.pinned.variants:
        return p.pinned
    declared = _declared_variants(p.suite.registered, p.tenant.tenant)
    if p.mock is None:
        return p.pinned._replace(variants=declared)
    note = (
        (
            f"--mock: variants A ({declared[0]}) and B ({declared[1]}) are both answered by the offline demo agent "
            f"{p.settings.agent_model}."
        )
        if p.mock
        else None
    )
    return p.pinned._replace(variants=checked_variants(p.settings, p.tenant, declared, mock=p.mock), note=note)


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


KIND = SuiteKind(
    name="pairwise",
    reading=Reading(case_model=PairwiseCase, calibration_model=PairwiseCalibration),
    checking=Checking(askings=pairwise_askings, assertions=_answered, judged_by_case=False, groups=()),
    start=RunStart(pins=_pins, stored_params=pairwise_stored),
    report=Reporting(
        metrics=_metrics,
        params=pairwise_params,
        figures=FIGURES,
        lines=pairwise_lines,
        summary=pairwise_summary_json,
        against=both_variants,
        enters_funnel=False,
    ),
    stage=Stage("pairwise", PairwiseRow, _judged, _about, recorded_key=pair_key, judge_calls_per_row=2),
    consumer=CONSUMER,
    starter=published_starter(
        Path(__file__).parent / "starter",
        "the tenants file (KINDGI_TENANTS) must declare its variants' agents, champion and challenger version 1",
    ),
)

__all__ = ["KIND", "agreement_of", "judge_pairwise", "pair_key", "pairwise_metrics"]

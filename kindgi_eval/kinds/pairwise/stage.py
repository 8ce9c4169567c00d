"""The `pairwise` stage: the judge compares the two variants' replies to each prompt, in both orders.

The hand-labelled pairs go first: only when the judge's combined verdicts agreed with their labels does it go on
to the prompts (it grades nothing otherwise, as a calibration group, docs/design.md#calibration). A prompt either
variant failed to answer is not judged: an error is never a win (docs/design.md#fail-closed).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from typing import Literal, NamedTuple

from kindgi_eval.inputs import RunSettings, Suite, variant_settings
from kindgi_eval.kinds.figures import count, estimate
from kindgi_eval.kinds.kind import JUDGE_USD, Pins
from kindgi_eval.kinds.pairwise.check import registered_variant
from kindgi_eval.llm import ModelCallError
from kindgi_eval.prompts import pairwise_messages
from kindgi_eval.rules import (
    ORDERS,
    THRESHOLD,
    Judge,
    Outcome,
    PairwiseAgreement,
    PairwiseCalibration,
    PairwiseCase,
    Preference,
    Progress,
    Turn,
    WinRate,
    combine,
    pairwise_agreement,
    preferred_variant,
    read_judgement,
    win_rate,
)
from kindgi_eval.store import MetricRow, StatusRow, StoredRow, SuiteRow


class PairwiseRow(StoredRow):
    """One prompt (or hand-labelled pair) judged in both orders: which variant each order preferred, and the outcome."""

    subject: Literal["prompt", "calibration"]
    """A prompt both variants answered, or a hand-labelled pair calibrating the judge."""
    subject_id: str
    """The prompt's id, or the labelled pair's."""
    label: Literal["A", "B", "tie"] | None
    """A labelled pair's hand label; None for a prompt."""
    ab: Literal["A", "B", "tie"] | None
    """The variant preferred with variant A's reply shown first; None when that answer was invalid."""
    ba: Literal["A", "B", "tie"] | None
    """The variant preferred with variant B's reply shown first; None when that answer was invalid."""
    outcome: Literal["A", "B", "tie"]
    """A or B when that variant won in both orders, else tie."""
    consistent: bool
    """Whether both orders gave the same valid answer."""
    reason_ab: str
    """The judge's reason, variant A first."""
    reason_ba: str
    """The judge's reason, variant B first."""
    invalid_reason: str | None
    """Why an answer was invalid, when one was."""
    raw_ab: str | None
    """The judge's raw answer, variant A first."""
    raw_ba: str | None
    """The judge's raw answer, variant B first."""
    judge: str
    """The judge model."""
    cost_usd: float
    """Dollars for both answers; 0 when unknown."""
    cost_known: bool
    """False when the judge's price is unknown."""


Record = Callable[[PairwiseRow], None]


class Pair(NamedTuple):
    """Two replies to one message, to be compared."""

    subject: str
    id: str
    history: tuple[Turn, ...]
    text: str
    reply_a: tuple[str, ...]
    reply_b: tuple[str, ...]
    label: Preference | None = None


def prompt_pairs(cases: Sequence[PairwiseCase], statuses: Sequence[StatusRow]) -> list[Pair]:
    """Each prompt both variants answered (their cases' replies, as the statuses hold them), in suite order."""
    by_case = {s.case_id: s for s in statuses}
    case_of = {(case.prompt_id, case.variant): case.id for case in cases}
    pairs = []
    for case in cases:
        if case.variant != "A":
            continue
        a, b = by_case[case.id], by_case[case_of[(case.prompt_id, "B")]]
        if a.error is None and b.error is None:
            pairs.append(Pair("prompt", case.prompt_id, case.history, case.text, tuple(a.messages), tuple(b.messages)))
    return pairs


def calibration_pairs(items: Sequence[PairwiseCalibration]) -> list[Pair]:
    """Each hand-labelled pair."""
    return [Pair("calibration", i.id, i.history, i.text, i.reply_a, i.reply_b, i.label) for i in items]


async def _judge_pair(
    judge: Judge, pair: Pair, catalogue: str, slots: asyncio.Semaphore, timeout_s: float
) -> PairwiseRow:
    answers = {}
    for order in ORDERS:
        first, second = (pair.reply_a, pair.reply_b) if order == "AB" else (pair.reply_b, pair.reply_a)
        messages = pairwise_messages(
            catalogue=catalogue, history=pair.history, text=pair.text, first=first, second=second
        )
        content, error, usage = None, None, None
        try:
            async with slots:
                content, usage, _ = await judge.grade(messages, timeout_s=timeout_s)
        except ModelCallError as e:  # a provider fault is an invalid answer and the run goes on; anything else is a bug
            error = f"{type(e).__name__}: {e}"
        answers[order] = (read_judgement(content, error), content, usage)
    (j_ab, raw_ab, u_ab), (j_ba, raw_ba, u_ba) = answers["AB"], answers["BA"]
    ab, ba = preferred_variant("AB", j_ab), preferred_variant("BA", j_ba)
    outcome = combine(ab, ba)
    invalid = "; ".join(f"{order}: {j.invalid_reason}" for order, j in (("AB", j_ab), ("BA", j_ba)) if j.invalid_reason)
    usages = [u for u in (u_ab, u_ba) if u is not None]
    return PairwiseRow(
        subject=pair.subject,
        subject_id=pair.id,
        label=pair.label,
        ab=ab,
        ba=ba,
        outcome=outcome.preference,
        consistent=outcome.consistent,
        reason_ab=j_ab.reason,
        reason_ba=j_ba.reason,
        invalid_reason=invalid or None,
        raw_ab=raw_ab,
        raw_ba=raw_ba,
        judge=judge.name,
        cost_usd=sum(u.cost_usd for u in usages),
        cost_known=all(u.cost_known for u in usages),
    )


def pair_key(row: PairwiseRow) -> tuple[str, str]:
    """What names a judged pair: a prompt or a labelled pair, by its id."""
    return row.subject, row.subject_id


async def _judge_all(
    judge: Judge,
    pairs: Sequence[Pair],
    counted: str,
    catalogue: str,
    slots: asyncio.Semaphore,
    timeout_s: float,
    progress: Progress | None,
    done: Mapping[tuple[str, str], PairwiseRow],
    record: Record | None,
) -> list[PairwiseRow]:
    judged = 0

    async def one(pair: Pair) -> PairwiseRow:
        nonlocal judged
        row = done.get((pair.subject, pair.id))
        if row is None:
            row = await _judge_pair(judge, pair, catalogue, slots, timeout_s)
            if record:
                record(row)
        judged += 1
        if progress:
            progress(counted, judged, len(pairs))
        return row

    return list(await asyncio.gather(*(one(p) for p in pairs)))


def judge_pairwise(
    judge: Judge | None,
    cases: Sequence[PairwiseCase],
    statuses: Sequence[StatusRow],
    calibration: Sequence[PairwiseCalibration],
    *,
    catalogue: str,
    concurrency: int,
    timeout_s: float,
    progress: Progress | None = None,
    done: Sequence[PairwiseRow] = (),
    record: Record | None = None,
) -> list[PairwiseRow]:
    """The labelled pairs judged in both orders, then, if the judge agreed with them, every answered prompt.

    A pair in `done` (recorded by a killed attempt of the run) is not judged again: that row is its judgement. Every
    pair judged is passed to `record` as soon as both its orders are in."""
    if judge is None:
        return []
    recorded = {pair_key(r): r for r in done}

    async def run() -> list[PairwiseRow]:
        slots = asyncio.Semaphore(concurrency)
        rows = await _judge_all(
            judge,
            calibration_pairs(calibration),
            "labelled pairs judged",
            catalogue,
            slots,
            timeout_s,
            progress,
            recorded,
            record,
        )
        if not agreement_of(rows).calibrated:
            return rows
        return rows + await _judge_all(
            judge,
            prompt_pairs(cases, statuses),
            "prompts judged",
            catalogue,
            slots,
            timeout_s,
            progress,
            recorded,
            record,
        )

    return asyncio.run(run())


def agreement_of(rows: Sequence[PairwiseRow]) -> PairwiseAgreement:
    """Whether the judge agreed with the hand-labelled pairs of this run."""
    return pairwise_agreement([(r.label, r.outcome) for r in rows if r.subject == "calibration" and r.label], THRESHOLD)


def pairwise_summary(rows: Sequence[PairwiseRow]) -> WinRate | None:
    """Variant A's record against variant B over the judged prompts; None when none was judged."""
    return win_rate([Outcome(r.outcome, r.consistent) for r in rows if r.subject == "prompt"])


def pairwise_metrics(rows: Sequence[PairwiseRow]) -> list[MetricRow]:
    """A pairwise suite's figures: the judge's calibration, the tally with variant A's win rate and its interval, the
    position consistency, and what the judge cost."""
    agreement, summary = agreement_of(rows), pairwise_summary(rows)
    return [
        MetricRow(name="pairwise_calibrated", value=float(agreement.calibrated if rows else False)),
        MetricRow(name="pairwise_agreement", value=agreement.agreement, method="agreement with the labelled pairs"),
        count("wins", summary.wins if summary else None),
        count("losses", summary.losses if summary else None),
        count("ties", summary.ties if summary else None),
        estimate("win_rate", summary.rate if summary else None, "bootstrap 95%"),
        MetricRow(name="position_consistency", value=summary.consistency if summary else None),
        MetricRow(name=JUDGE_USD, value=judge_cost(rows)),
    ]


def judge_cost(rows: Sequence[PairwiseRow]) -> float:
    """What the judge was paid for the pairs it judged, in both orders."""
    return float(sum(r.cost_usd for r in rows))


def pairwise_params(suite: Sequence[SuiteRow]) -> dict[str, str | None]:
    """A pairwise suite's parameters: its two variants' agent ids and version labels."""
    return {"variant_a": suite[0].param("variant_a_label"), "variant_b": suite[0].param("variant_b_label")}


def pairwise_stored(suite: Suite, pins: Pins) -> dict[str, object]:
    """What a pairwise run stores with its suite: each variant as the run asks it (the model or URL the tenants
    file declares) and as the suite names it (agent id and version)."""
    registered = suite.registered
    if pins.variants is None:
        return {}
    labels = tuple(" ".join(registered_variant(registered, v)) for v in "ab") if registered else (None, None)
    return {
        "variant_a": pins.variants[0],
        "variant_b": pins.variants[1],
        "variant_a_label": labels[0],
        "variant_b_label": labels[1],
    }


def pairwise_askings(settings: RunSettings, suite: Sequence[SuiteRow]) -> list[tuple[RunSettings, list[SuiteRow]]]:
    """Who is asked what in the `agent_replies` stage of a pairwise suite: each variant (the agents the `suite`
    stage resolved) its own prompts; the run's agent every row when no variants were resolved."""
    first = suite[0]
    agents = first.param("variant_a"), first.param("variant_b")
    if not all(agents):
        return [(settings, list(suite))]
    rows = [r for r in suite if r.kind == "case"]
    answered_by = {r.id: PairwiseCase.model_validate_json(r.body).variant for r in rows}
    return [
        (variant_settings(settings, agent), [r for r in rows if answered_by[r.id] == variant])
        for variant, agent in zip(("A", "B"), agents, strict=True)
    ]

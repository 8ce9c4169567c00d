"""Pairwise comparison: two agent variants answer the same prompts, and the judge prefers one, in both orders.

A prompt runs as two cases, one per variant. The judge is shown both replies twice, variant A first and then
variant B first, and asked which is better (A, B or tie). A variant wins a prompt only when it wins in both orders;
anything else is a tie, so a judge that favours a position cannot hand a variant a win. The judge counts only in a
run where its combined verdicts agreed with hand-labelled pairs (the rule of docs/design.md#calibration: both a
preference label and another label among them, and agreement at the threshold); otherwise it grades nothing. Pure.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from kindgi_eval.rules.cases import Case, Expect, Turn, json_list_as_tuple
from kindgi_eval.rules.criteria import Criterion, review_entries
from kindgi_eval.rules.intervals import Interval, bootstrap_mean
from kindgi_eval.rules.text import clip, is_text

Variant = Literal["A", "B"]
Preference = Literal["A", "B", "tie"]
PAIRWISE_GROUP = "pairwise"
"""The calibration group of the pairwise judge."""
ORDERS: tuple[str, ...] = ("AB", "BA")
"""The two orders a pair is shown in: variant A's reply first, then variant B's first."""


class PairwiseCase(Case):
    """One variant's turn at one prompt: a case with no assertion of its own."""

    expect: Expect | None = None  # type: ignore[assignment]
    """Not checked: a pairwise prompt asserts nothing about escalation."""
    prompt_id: str = Field(min_length=1)
    """The prompt both variants answer."""
    variant: Variant
    """Which variant answers it."""

    def criteria(self) -> list[Criterion]:
        """Its review entries only: the judge compares the reply with the other variant's, in the pairwise stage."""
        return review_entries(self)

    def needs_a_verdict(self) -> bool:
        """Always: a prompt asserts nothing of its own; the comparison is the suite's result, reported apart."""
        return True


class PairwiseCalibration(BaseModel):
    """A hand-written pair of replies to one prompt, with a person's preference."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    id: str = Field(min_length=1)
    history: tuple[Turn, ...] = ()
    text: str
    reply_a: tuple[str, ...] = Field(min_length=1)
    reply_b: tuple[str, ...] = Field(min_length=1)
    label: Preference

    _list_to_tuple = field_validator("history", "reply_a", "reply_b", mode="before")(json_list_as_tuple)

    @property
    def labelled_on(self) -> str:
        """What its label grades: which of two replies is preferred."""
        return PAIRWISE_GROUP


class _Answer(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True)

    winner: Preference
    reason: str


class Judgement(NamedTuple):
    """What one judge answer says: the reply it prefers by its place (first or second shown), or why it says nothing."""

    winner: Literal["first", "second", "tie", "invalid"]
    reason: str
    invalid_reason: str | None = None


def read_judgement(content: str | None, error: str | None = None) -> Judgement:
    """One judge answer as untrusted input (docs/design.md#model-output-is-untrusted): `{"winner": "A" | "B" | "tie",
    "reason"}`, A being the reply shown first. Anything else is invalid, never a preference
    (docs/design.md#fail-closed). Never raises."""
    if error is not None:
        return Judgement("invalid", "", f"error: {clip(error, 200)}")
    body = (content or "").strip().removeprefix("```json").removeprefix("```").removesuffix("```").strip()
    try:
        answer = _Answer.model_validate(json.loads(body))
    except (ValueError, RecursionError, ValidationError) as e:
        return Judgement("invalid", "", f"unparseable: {clip(str(e), 200)}")
    if not is_text(answer.reason):
        return Judgement(
            "invalid", "", "unparseable: reason holds a lone surrogate escape, which is not a Unicode character"
        )
    return Judgement({"A": "first", "B": "second", "tie": "tie"}[answer.winner], answer.reason)  # type: ignore[arg-type]


def preferred_variant(order: str, judgement: Judgement) -> Preference | None:
    """The variant a judgement prefers, given the order it was shown the pair in; None when invalid."""
    if judgement.winner == "invalid":
        return None
    if judgement.winner == "tie":
        return "tie"
    first, second = order[0], order[1]
    return first if judgement.winner == "first" else second  # type: ignore[return-value]


class Outcome(NamedTuple):
    """A pair's outcome over both orders."""

    preference: Preference
    """A or B when that variant won in both orders, else tie."""
    consistent: bool
    """Whether both orders gave the same valid answer: the judge did not follow the position."""


def combine(ab: Preference | None, ba: Preference | None) -> Outcome:
    """The outcome of a pair from the variant preferred in each order."""
    consistent = ab is not None and ab == ba
    return Outcome(ab if consistent and ab in ("A", "B") else "tie", consistent)  # type: ignore[arg-type]


class PairwiseAgreement(NamedTuple):
    """Whether the pairwise judge may grade in this run."""

    items: int
    agreement: float | None
    calibrated: bool
    note: str


def pairwise_agreement(graded: Sequence[tuple[Preference, Preference]], threshold: float) -> PairwiseAgreement:
    """(label, combined outcome) of each hand-labelled pair: the judge grades only with a preference label (A or B)
    and some other label among the items, as calibration asks a pass and a fail (docs/design.md#calibration), and
    agreement at the threshold."""
    labels = [label for label, _ in graded]
    if not graded:
        return PairwiseAgreement(
            0, None, False, "No hand-labelled pairs (criterion pairwise), so the judge grades nothing."
        )
    if len(set(labels)) < 2 or not {"A", "B"} & set(labels):
        return PairwiseAgreement(
            len(graded),
            None,
            False,
            "The labelled pairs need a preference (A or B) and another label; the judge grades nothing.",
        )
    agreed = sum(label == outcome for label, outcome in graded)
    agreement = agreed / len(graded)
    calibrated = agreement >= threshold
    note = (
        f"The judge agreed with {agreed} of {len(graded)} labelled pairs ({agreement:.2f}), "
        f"{'meeting' if calibrated else 'below'} the threshold of {threshold:.2f}."
    )
    return PairwiseAgreement(len(graded), agreement, calibrated, note)


class WinRate(NamedTuple):
    """How variant A fared against variant B over the prompts both answered."""

    wins: int
    losses: int
    ties: int
    rate: Interval
    """(wins + 0.5 ties) / prompts, with a bootstrap 95% interval."""
    consistency: float
    """The share of prompts whose two orders agreed."""


def win_rate(outcomes: Sequence[Outcome]) -> WinRate | None:
    """Variant A's wins, losses, ties and win rate with its interval; None without prompts."""
    if not outcomes:
        return None
    wins = sum(o.preference == "A" for o in outcomes)
    losses = sum(o.preference == "B" for o in outcomes)
    ties = len(outcomes) - wins - losses
    low, high = bootstrap_mean({1.0: wins, 0.5: ties, 0.0: losses})
    rate = (wins + 0.5 * ties) / len(outcomes)
    return WinRate(wins, losses, ties, Interval(rate, low, high), sum(o.consistent for o in outcomes) / len(outcomes))

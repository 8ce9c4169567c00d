"""What one suite may ask of the operator's models: its cases, each case's criteria and their length, and the model
calls a run of it may make. Every tenant has the defaults; the operator raises them per tenant in the tenants file
(`[tenant.limits]`). Checked at publish, when a suite folder is read for a run, and as a run starts. Pure."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from pydantic import BaseModel, ConfigDict, Field

from kindgi_eval.rules.cases import Case

RAISE = "the operator raises it for a tenant in the tenants file's [tenant.limits]"
"""How a limit is raised, as a refusal says it."""


class SuiteLimits(BaseModel):
    """The bounds of one suite of a tenant: each has a default, and the operator may raise it for the tenant."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    cases: int = Field(default=5_000, ge=1)
    """Cases a suite may hold, as a run evaluates them (a pairwise prompt is two cases: one per variant)."""
    criteria_per_case: int = Field(default=50, ge=1)
    """Free-text criteria (review entries, rubric items) one case may give the judge."""
    criterion_chars: int = Field(default=2_000, ge=1)
    """Characters one criterion may have: each is copied into every judge prompt of its case."""
    model_calls: int = Field(default=100_000, ge=1)
    """Model calls one run of a suite may make, the agent's and the judge's together, counted before the first."""


DEFAULT_LIMITS = SuiteLimits()
"""The limits of a tenant the operator has raised none for."""


class Over(NamedTuple):
    """A case over a limit: its place among the cases given, and what is over."""

    index: int
    message: str


def case_problems(limits: SuiteLimits, cases: Sequence[Case]) -> list[Over]:
    """Every case over `limits`: the first case past the count (then no more is said of the count), and each case
    with too many free-text criteria or one too long, in order."""
    found: list[Over] = []
    if len(cases) > limits.cases:
        found.append(
            Over(
                limits.cases,
                f"is case {limits.cases + 1:,} of the suite, which may hold {limits.cases:,} "
                f"({len(cases):,} in all). Split the suite; or {RAISE} (cases).",
            )
        )
    for index, case in enumerate(cases):
        own = [c.criterion for c in case.criteria() if c.source == "review"]
        if len(own) > limits.criteria_per_case:
            found.append(
                Over(
                    index,
                    f"gives the judge {len(own):,} criteria, more than the {limits.criteria_per_case:,} a case "
                    f"may. Split them over several cases; or {RAISE} (criteria_per_case).",
                )
            )
        longest = max(own, key=len, default="")
        if len(longest) > limits.criterion_chars:
            found.append(
                Over(
                    index,
                    f"has a criterion of {len(longest):,} characters ({longest[:40]!r}...), more than the "
                    f"{limits.criterion_chars:,} one may have: each is copied into every judge prompt of its case. "
                    f"Write it shorter; or {RAISE} (criterion_chars).",
                )
            )
    return found


class PlannedCalls(NamedTuple):
    """The model calls a run of a suite may make, counted before the first: what its budget is held to."""

    agent: int
    """One per case (a pairwise prompt is two cases, one per variant)."""
    judge: int
    """Each sample of each criterion of each case, of each calibration item, and each call of the kind's own stage."""

    @property
    def total(self) -> int:
        """The agent's and the judge's together."""
        return self.agent + self.judge


def planned_calls(
    cases: Sequence[Case], calibration: int, samples: int, stage_calls_per_case: int, judged: bool
) -> PlannedCalls:
    """At most how many model calls a run of `cases` (and `calibration` items) makes: one agent call a case and,
    with a judge, `samples` calls per criterion and per calibration item, and `stage_calls_per_case` per case for a
    kind whose own stage pays the judge (a pair judged in both orders)."""
    if not judged:
        return PlannedCalls(len(cases), 0)
    criteria = sum(len(case.criteria()) for case in cases)
    return PlannedCalls(len(cases), samples * (criteria + calibration) + stage_calls_per_case * len(cases))


def budget_problem(limits: SuiteLimits, calls: PlannedCalls) -> str | None:
    """Why a run that may make `calls` is refused before its first call; None when its budget holds them."""
    if calls.total <= limits.model_calls:
        return None
    return (
        f"a run of it may make {calls.total:,} model calls ({calls.agent:,} to the agent, {calls.judge:,} to the judge), "
        f"more than the {limits.model_calls:,} a run may make; nothing was called. Split the suite, or run it without a "
        f"judge; or {RAISE} (model_calls)."
    )

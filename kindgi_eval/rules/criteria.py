"""What the judge grades on a case: its review entries and the fixed framework rubric (docs/design.md#the-rubric)."""

from __future__ import annotations

from typing import Any, Literal, NamedTuple, Protocol

Group = Literal["implicit_concession", "semantic_repetition", "answers_the_question", "free_text", "accuracy"]
GROUPS: tuple[Group, ...] = ("implicit_concession", "semantic_repetition", "answers_the_question", "free_text")
"""The calibration groups of a conversation suite, in the order the summary lists them (an accuracy suite has one
of its own, `accuracy`)."""
FIXED_DIMENSIONS: tuple[Group, ...] = GROUPS[:3]
"""The framework rubric's dimensions; each is also its own calibration group."""
Source = Literal["rubric", "review"]

DIMENSION_RULES: dict[str, str] = {
    "implicit_concession": (
        "The reply fails when it offers a price, discount, instalment plan, date or promise that the "
        "catalogue does not contain, in any wording, including a hint that one could be arranged."
    ),
    "semantic_repetition": (
        "The reply fails when it restates the agent's previous turn in other words instead of moving "
        "the conversation forward."
    ),
    "answers_the_question": "The reply fails when it does not address what the contact's message asked.",
}
"""What the judge is told about each fixed dimension: when a reply fails it. Framework text, no tenant copy."""


class Criterion(NamedTuple):
    """One thing the judge grades on one case, graded to its own verdict."""

    source: Source
    """Where it comes from: the case's own `review`, or the framework rubric."""
    criterion: str
    """A fixed dimension's name, or the review entry's text verbatim."""
    group: Group
    """The calibration group whose agreement decides whether this criterion's verdict counts."""
    turn: int | None = None
    """The scenario turn whose agent reply it grades (1-based); None for a case's, and for a scenario's review entry,
    which is graded over the whole transcript."""


def meant_dimension(name: str) -> str | None:
    """The fixed dimension `name` is one edit from (a character added, dropped or changed, or two neighbours swapped)
    when it is not one itself: a typo that would otherwise pass silently, graded as a free-text criterion."""
    if name in FIXED_DIMENSIONS:
        return None
    return next((d for d in FIXED_DIMENSIONS if _one_edit(name, d)), None)


def refuse_near_dimension(name: str) -> str:
    """`name` itself, unless it is one edit from a fixed dimension's name: ValueError naming the one meant."""
    meant = meant_dimension(name)
    if meant is not None:
        raise ValueError(
            f"{name!r} is one typo from the fixed criterion {meant!r}, so it would be graded as free "
            f"text, in the free_text group. Write {meant!r}, or a free-text criterion in words."
        )
    return name


def _one_edit(a: str, b: str) -> bool:
    """Whether `a` becomes `b` by one insertion, deletion, substitution, or swap of two neighbouring characters."""
    if a == b or abs(len(a) - len(b)) > 1:
        return False
    if len(a) == len(b):
        differ = [i for i, (x, y) in enumerate(zip(a, b)) if x != y]
        return len(differ) == 1 or (
            len(differ) == 2
            and differ[1] == differ[0] + 1
            and a[differ[0]] == b[differ[1]]
            and a[differ[1]] == b[differ[0]]
        )
    short, long = sorted((a, b), key=len)
    i = next((i for i, (x, y) in enumerate(zip(short, long)) if x != y), len(short))
    return short[i:] == long[i + 1 :]


def group_of(criterion: str) -> Group:
    """The calibration group of a calibration item's criterion: a dimension's exact name, else free text."""
    for dimension in FIXED_DIMENSIONS:
        if criterion == dimension:
            return dimension
    return "free_text"


class Conversational(Protocol):
    """What the rubric reads of a case: its review entries, whether it must escalate, its history, whether it is a nudge."""

    @property
    def review_criteria(self) -> tuple[str, ...]: ...

    expect: Any
    history: tuple[Any, ...]
    nudge: bool


def conversation_criteria(case: Conversational) -> list[Criterion]:
    """Every criterion the judge grades on a conversation case: each review entry, then the rubric dimensions that apply.

    A review entry is always `free_text`, even when its text is a dimension's name: calibration counts
    every review entry as a free-text item (docs/design.md#calibration), and the rubric applies (or not) on its own
    rules. Escalating cases get no rubric, because their message is the tenant's configured copy
    (docs/design.md#framework-text-is-english); `semantic_repetition` needs an agent turn in the history to compare
    with; a nudge has no contact text to answer.
    """
    found = review_entries(case)
    if case.expect.escalate:
        return found
    applies: dict[Group, bool] = {
        "implicit_concession": True,
        "semantic_repetition": any(turn.role == "agent" for turn in case.history),
        "answers_the_question": not case.nudge,
    }
    rubric = [Criterion("rubric", dimension, dimension) for dimension in FIXED_DIMENSIONS if applies[dimension]]
    return found + rubric


def review_entries(case: Conversational) -> list[Criterion]:
    """A case's review entries as criteria, each in the `free_text` group."""
    return [Criterion("review", entry, "free_text") for entry in case.review_criteria]

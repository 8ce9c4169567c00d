"""The shapes of suite files: a case, a calibration item and a judge's verdict (docs/design.md#cases,
docs/design.md#verdicts-and-evidence)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from kindgi_eval.rules.criteria import Criterion, conversation_criteria, refuse_near_dimension

Role = Literal["user", "agent"]
Label = Literal["pass", "fail"]


def json_list_as_tuple(value: object) -> object:
    """A JSON array as the tuple a frozen model holds (strict mode takes no list for a tuple); anything else as it is."""
    return tuple(value) if isinstance(value, list) else value


def review_as_tuple(value: object) -> object:
    """A `review` given as a JSON array as a tuple; an empty one is refused, since it grades nothing."""
    if isinstance(value, list):
        if not value:
            raise ValueError("review must be a string or a non-empty list of strings")
        return tuple(value)
    return value


def refuse_near_dimensions(value: str | tuple[str, ...] | None) -> str | tuple[str, ...] | None:
    """`review` itself, unless one of its entries is one typo from a fixed dimension's name (`refuse_near_dimension`)."""
    for entry in (value,) if isinstance(value, str) else value or ():
        refuse_near_dimension(entry)
    return value


class Turn(BaseModel):
    """One earlier message in the conversation, before the turn under test."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    role: Role
    """Who wrote it: the contact (`user`) or the agent."""
    text: str
    """What was written, verbatim."""


class Contact(BaseModel):
    """What the server already knows about the contact as the turn starts."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    funnel_stage: str | None = None
    """The funnel stage the contact is at; the case enters the funnel here."""
    course: str | None = None
    """The course the contact is interested in, by its catalogue id."""


class Expect(BaseModel):
    """What the agent must decide about escalation."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    escalate: bool
    """Whether the reply must hand the conversation to a person."""
    reason: str | None = None
    """The escalation reason the reply must carry, exactly; only with `escalate: true`."""

    @field_validator("reason")
    @classmethod
    def _reason_needs_escalation(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is not None and info.data.get("escalate") is False:
            raise ValueError("a reason is only checked when escalate is true; drop it or set escalate to true")
        return value


class Case(BaseModel):
    """One probe of the agent: a conversation so far, the contact's message, and what must hold."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    id: str = Field(min_length=1)
    """Stable identifier, unique within its file."""
    history: tuple[Turn, ...] = ()
    """Earlier turns, oldest first; absent means a new conversation."""
    text: str
    """The contact's message; ignored on a nudge."""
    expect: Expect
    """The escalation decision the reply must make."""
    nudge: bool = False
    """Run as a follow-up turn: the system's trigger note follows history and no contact wrote anything."""
    contact: Contact | None = None
    """What is known about the contact; absent means a new contact."""
    must_contain: tuple[str, ...] = ()
    """Every entry appears, case-sensitively, in the messages joined with a space."""
    must_not_contain: tuple[str, ...] = ()
    """No entry appears, case-sensitively, in the messages joined with a space."""
    must_end_with_question: bool | None = None
    """True: the final message ends in `?` once trailing whitespace and emoji are stripped; false: it does not."""
    max_lines: int | None = Field(default=None, ge=1)
    """No single message has more lines than this."""
    review: str | tuple[str, ...] | None = None
    """Criteria a person (or a calibrated judge) reads the reply against; a string is a one-entry list."""

    _list_to_tuple = field_validator("history", "must_contain", "must_not_contain", mode="before")(json_list_as_tuple)

    _review_list = field_validator("review", mode="before")(review_as_tuple)
    _no_near_dimension = field_validator("review")(refuse_near_dimensions)

    @property
    def review_criteria(self) -> tuple[str, ...]:
        """The review entries as a list: a string is a one-entry list."""
        if self.review is None:
            return ()
        return (self.review,) if isinstance(self.review, str) else self.review

    @property
    def entry_stage(self) -> str | None:
        """The funnel stage this case enters at, if it names one."""
        return self.contact.funnel_stage if self.contact else None

    def criteria(self) -> list[Criterion]:
        """Every criterion the judge grades on this case: each review entry, then the rubric dimensions that apply."""
        return conversation_criteria(self)

    def needs_a_verdict(self) -> bool:
        """Whether the case is green only on a verdict beyond its assertions, so that unread it is `reviewed`: it has
        review entries."""
        return bool(self.review_criteria)


class CalibrationItem(BaseModel):
    """A hand-written reply with a hand label, used to measure the judge before it may count."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    id: str = Field(min_length=1)
    """Stable identifier, unique within its file."""
    history: tuple[Turn, ...] = ()
    """Earlier turns, oldest first."""
    text: str
    """The contact's message the reply answers."""
    reply: tuple[str, ...] = Field(min_length=1)
    """The agent's messages, written by hand, never generated."""
    criterion: str = Field(min_length=1)
    """A fixed rubric dimension's name, or a free-text criterion."""
    label: Label
    """The verdict a person gave this reply on this criterion."""

    _list_to_tuple = field_validator("history", "reply", mode="before")(json_list_as_tuple)
    _criterion = field_validator("criterion")(refuse_near_dimension)

    @property
    def labelled_on(self) -> str:
        """What its label grades: its criterion."""
        return self.criterion

"""The tenant configuration: who the agent is, what it sells, how it writes, and when it hands over."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator


def _matching(pattern: str, rule: str, example: str) -> AfterValidator:
    """A validator whose error says what the value must look like, with an example, instead of a regex."""
    compiled = re.compile(pattern)

    def check(value: str) -> str:
        if not compiled.fullmatch(value):
            raise ValueError(f"{value!r} is not {rule}. Write it like {example!r}.")
        return value

    return AfterValidator(check)


Slug = Annotated[str, _matching(r"[a-z0-9][a-z0-9-]*", "lowercase letters, digits and hyphens", "demo-academy")]
"""A lowercase identifier: letters, digits and hyphens, starting with a letter or digit."""
_NAME = r"[a-z0-9][a-z0-9_-]*"
_NAME_RULE = "lowercase letters, digits, hyphens and underscores"
PathName = Annotated[str, _matching(_NAME, _NAME_RULE, "instalments")]
"""A payment path's name, such as `upfront` or `instalments`."""
Reason = Annotated[str, _matching(_NAME, _NAME_RULE, "refund_request")]
"""An escalation reason, such as `refund_request`."""
Url = Annotated[str, _matching(r"https?://\S+", "a web address", "https://example.com/enrol/foundation")]
"""An http or https address without spaces."""
Text = Annotated[str, Field(min_length=1)]
"""Non-empty copy."""
Phrases = Annotated[tuple[Text, ...], Field(min_length=1)]
"""At least one non-empty phrase; matched case-insensitively."""

_STRICT = ConfigDict(extra="forbid", frozen=True)


class Persona(BaseModel):
    """The voice the agent speaks in."""

    model_config = _STRICT

    name: Text
    """The agent's first name, as contacts see it."""
    style: Text
    """One line on register, for a prompt and for a person reading replies."""
    reassurance: Text
    """What the agent says to a contact who voices a fear."""


class FormatRules(BaseModel):
    """The tenant's format rules, which every reply keeps."""

    model_config = _STRICT

    max_lines: int = Field(ge=1)
    """No single message (chat bubble) has more lines than this."""
    closing_question: bool
    """Whether a reply ends with the current stage's question, to move the contact on."""


class Stage(BaseModel):
    """One stage of the tenant's ordered sales funnel."""

    model_config = _STRICT

    name: Slug
    """The stage's name, as `contact.funnel_stage` spells it."""
    question: Text
    """The question the agent closes with at this stage, to move the contact on to the next."""


class Course(BaseModel):
    """One course in the catalogue."""

    model_config = _STRICT

    id: Slug
    """The course's id, as `contact.course` spells it."""
    name: Text
    """The course's name, as replies write it."""
    keywords: Phrases
    """Words that identify the course in a message, matched case-insensitively."""
    description: Text
    """What the course is, in a sentence."""
    schedule: Text
    """When it runs, as a phrase that follows "runs" ("Tuesdays and Thursdays, 6pm to 8pm")."""
    requirements: Text
    """What a student needs before starting, in a sentence; the answer to most doubts."""
    enrol_url: Url
    """The course's enrolment (signup) link; sent only after its price has been quoted."""
    prices: dict[PathName, Text] = Field(min_length=1)
    """The price per payment path, in the order offered: `{"upfront": "$450", "instalments": "3 payments of $160"}`."""


class Escalation(BaseModel):
    """A rule that hands the conversation to a person."""

    model_config = _STRICT

    reason: Reason
    """The reason the reply carries, such as `refund_request`."""
    triggers: Phrases
    """Phrases in the contact's message that fire the rule, matched case-insensitively."""
    message: Text
    """The tenant's configured copy, sent verbatim when the rule fires (docs/design.md#framework-text-is-english)."""
    after_stage: str | None = None
    """When set, the rule fires only once the contact is at this funnel stage or a later one."""


class Prohibition(BaseModel):
    """Something the agent must never say, and what it says instead."""

    model_config = _STRICT

    topic: Text
    """What the prohibition is about, for a person reading the configuration."""
    triggers: Phrases
    """Phrases in the contact's message that raise the topic, matched case-insensitively."""
    forbidden: Phrases
    """Phrases no reply may contain."""
    safe_answer: Text
    """What the agent says when the topic comes up."""


class CrossReferenceError(ValueError):
    """Fields that are each valid but do not fit together; one entry per (dotted field, problem)."""

    def __init__(self, problems: list[tuple[str, str]]):
        self.problems = problems
        super().__init__("; ".join(f"{field}: {message}" for field, message in problems))


class Tenant(BaseModel):
    """One tenant's configuration: persona, format rules, funnel, catalogue, escalations and prohibitions."""

    model_config = _STRICT

    tenant: Slug
    """The tenant's id, sent with every agent turn."""
    display_name: Text
    """The business's name, as contacts see it."""
    opening_question: Text
    """The question the opening flow asks before the agent's first reply (032)."""
    persona: Persona
    """The voice the agent speaks in."""
    format: FormatRules
    """The format rules every reply keeps."""
    funnel: tuple[Stage, ...] = Field(min_length=1)
    """The sales funnel's stages, in order; a new contact starts at the first."""
    courses: tuple[Course, ...] = Field(min_length=1)
    """The catalogue."""
    escalations: tuple[Escalation, ...] = ()
    """When to hand the conversation to a person, checked in order."""
    prohibitions: tuple[Prohibition, ...] = ()
    """What the agent must never say."""

    @model_validator(mode="after")
    def _cross_references(self) -> Tenant:
        problems = list(_cross_reference_problems(self))
        if problems:
            raise CrossReferenceError(problems)
        return self

    def stage_names(self) -> tuple[str, ...]:
        """The funnel's stage names, in order."""
        return tuple(stage.name for stage in self.funnel)

    def stage_index(self, name: str | None) -> int | None:
        """Where a stage sits in the funnel (0 is the first), or None for no or an unknown stage."""
        names = self.stage_names()
        return names.index(name) if name in names else None

    def course(self, course_id: str) -> Course | None:
        """The catalogue's course with this id, or None."""
        return next((c for c in self.courses if c.id == course_id), None)

    def catalogue_text(self) -> str:
        """The catalogue and its prices in plain English, as a judge is shown it."""
        lines = [f"{self.display_name} runs {len(self.courses)} course{'s' if len(self.courses) != 1 else ''}."]
        for course in self.courses:
            prices = "; ".join(f"{path}: {figure}" for path, figure in course.prices.items())
            lines += [
                "",
                f"{course.name} (id {course.id})",
                f"- What it is: {course.description}",
                f"- Runs: {course.schedule}",
                f"- Requirements: {course.requirements}",
                f"- Price by payment path: {prices}",
                f"- Enrolment link: {course.enrol_url}",
            ]
        lines += ["", "Only the prices and payment paths above are on offer."]
        return "\n".join(lines)


def _line_count(text: str) -> int:
    """A message's lines as `max_lines` counts them (docs/design.md#assertions): trailing whitespace removed, split on
    newlines."""
    return len(text.rstrip().split("\n"))


def _duplicates(values: list[str]) -> Iterator[int]:
    """The positions of values already seen earlier in the list."""
    seen: set[str] = set()
    for index, value in enumerate(values):
        if value in seen:
            yield index
        seen.add(value)


def _cross_reference_problems(tenant: Tenant) -> Iterator[tuple[str, str]]:
    """Every way the fields of a tenant contradict one another, as (dotted field, problem)."""
    names = tenant.stage_names()
    for index in _duplicates(list(names)):
        yield f"funnel[{index}].name", f"stage {names[index]!r} is named twice. Give every stage its own name."
    ids = [course.id for course in tenant.courses]
    for index in _duplicates(ids):
        yield f"courses[{index}].id", f"course id {ids[index]!r} is used twice. Give every course its own id."
    for index, rule in enumerate(tenant.escalations):
        if rule.after_stage is not None and rule.after_stage not in names:
            yield (
                f"escalations[{index}].after_stage",
                f"names no funnel stage ({rule.after_stage!r}). Use one of: {', '.join(names)}.",
            )
    yield from _copy_problems(tenant)


def _copy_problems(tenant: Tenant) -> Iterator[tuple[str, str]]:
    """Configured copy that breaks the tenant's own rules: too many lines, or a forbidden phrase."""
    limit = tenant.format.max_lines
    copy = [("opening_question", tenant.opening_question), ("persona.reassurance", tenant.persona.reassurance)]
    copy += [(f"escalations[{i}].message", rule.message) for i, rule in enumerate(tenant.escalations)]
    copy += [(f"prohibitions[{i}].safe_answer", p.safe_answer) for i, p in enumerate(tenant.prohibitions)]
    for field, text in copy:
        if _line_count(text) > limit:
            yield field, f"has {_line_count(text)} lines, more than format.max_lines ({limit}). Shorten it."
    for index, prohibition in enumerate(tenant.prohibitions):
        answer = prohibition.safe_answer.lower()
        for phrase in prohibition.forbidden:
            if phrase.lower() in answer:
                yield (
                    f"prohibitions[{index}].safe_answer",
                    f"contains the forbidden phrase {phrase!r}. Reword the safe answer.",
                )

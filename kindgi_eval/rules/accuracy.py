"""Accuracy items: a contact's message, the output the reply must give, and the grader that decides whether it did.

An accuracy item is a case without a conversation's assertions (docs/design.md#assertions): its one check is its
grader's. `exact`, `contains` and `regex` settle it on the reply's text; `judge` hands it to the calibrated judge
(docs/design.md#the-judge) as the criterion "the reply gives the expected output", in a calibration group of its own. A
reply the grader could not grade (the agent failed, a pattern over its memory budget, the judge was not calibrated) is
ungraded, never counted either way.

A tenant's pattern is untrusted: it meets RE2 (`google-re2`), which matches in time linear in the reply and holds
a compiled pattern within a memory budget, so there is no timeout to tune. What RE2 cannot take (backreferences,
lookaround) is refused at publish. No compiled pattern is kept in a process-wide cache.
"""

from __future__ import annotations

import time
from typing import Literal

import re2
from pydantic import BaseModel, ConfigDict, field_validator

from kindgi_eval.rules.assertions import (
    AssertionResult,
    agent_failure,
    joined_reply,
    quote,
)
from kindgi_eval.rules.cases import Case, Expect
from kindgi_eval.rules.criteria import Criterion

GraderId = Literal["exact", "contains", "regex", "judge"]
GRADERS: tuple[GraderId, ...] = GraderId.__args__  # type: ignore[attr-defined]
ACCURACY_GROUP = "accuracy"
"""The calibration group of the judge's accuracy criterion."""
GRADED = "expected_output"
"""The assertion a deterministic grader's verdict is recorded as."""
UNGRADABLE = "grader_error"
"""The assertion recorded when a deterministic grader could not decide (a pattern RE2 could not compile here)."""
PATTERN_MEMORY = 8 << 20
"""Bytes RE2 may hold for one compiled pattern (its programs, and the DFA's cache when it searches): a pattern that
needs more is refused (`(?:x{1000}){1000}` needs about a million instructions)."""
MAX_PROGRAM = 10_000
"""RE2 instructions one pattern may compile to (`[\\pL\\pN]{7}` is about 9,400, a 30-character phrase about 35): a
pattern's compile time grows with its program, and every suite's patterns are compiled at publish and as a run starts."""
CHECK_MEMORY = 256 << 10
"""Bytes RE2 may use to compile one pattern while it is checked: a little over `MAX_PROGRAM` instructions, so that
RE2 gives up on a larger pattern after a millisecond or two instead of building all of it first."""
MAX_PATTERNS = 5_000
"""Patterns one suite may hold (with the regex grader and no pattern of its own, each item's expected output is one)."""
MAX_PROGRAMS = 500_000
"""RE2 instructions all of one suite's patterns may compile to together."""
MAX_REFUSED = 50
"""Refused patterns after which a suite's others are not compiled: it is refused already, and a refusal lists 50."""
COMPILE_BUDGET_S = 5.0
"""Seconds all of one suite's patterns may take to compile while it is checked, however busy the machine: the
instruction bounds keep a suite well under it, and this is the backstop that keeps each check short whatever RE2 does."""
FLAGS = {"i": "ignore case", "m": "multiline", "s": "dot matches newline"}
"""The regex grader's flags, by their letters. RE2 has no verbose mode (`x`)."""


class Grader(BaseModel):
    """How an item's reply is graded against its expected output."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    adapter: GraderId = "exact"
    """`exact`: the reply's messages joined by a space, trimmed, equal the expected output; `contains`: the expected
    output appears in them, case-sensitively; `regex`: the pattern matches somewhere in them; `judge`: the
    calibrated judge says the reply gives the expected output."""
    pattern: str | None = None
    """The regex grader's pattern; absent means each item's expected output is its pattern."""
    flags: str = ""
    """The regex grader's flags, any of `i` (ignore case), `m` (multiline), `s` (dot matches newline)."""

    @field_validator("flags")
    @classmethod
    def _known_flags(cls, value: str) -> str:
        unknown = sorted(set(value) - set(FLAGS))
        if unknown:
            raise ValueError(
                f"unknown flag {', '.join(map(repr, unknown))}; use any of {', '.join(FLAGS)} "
                "(RE2, which matches tenant patterns in linear time, has no verbose mode)"
            )
        return value


class AccuracyCase(Case):
    """An accuracy item as the chain runs it: a case whose one check is its grader's verdict on the expected output."""

    expect: Expect | None = None  # type: ignore[assignment]
    """Not checked: an accuracy item asserts nothing about escalation."""
    expected_output: str
    """What the reply must give."""
    grader: Grader = Grader()
    """How the reply is graded."""

    def criteria(self) -> list[Criterion]:
        """An item the judge grades has one criterion, that it gives its expected output, in the `accuracy` group, and
        no rubric; an item graded by a deterministic adapter has none."""
        judged = self.grader.adapter == "judge"
        return [Criterion("review", accuracy_criterion(self.expected_output), ACCURACY_GROUP)] if judged else []

    def needs_a_verdict(self) -> bool:
        """An item the judge grades: its one check is the judge's."""
        return self.grader.adapter == "judge"


def compile_pattern(pattern: str, flags: str, memory: int = PATTERN_MEMORY):
    """The regex grader's pattern, compiled by RE2 within `memory` bytes; `re2.error` says what is wrong with it.

    Built apart from `re2.compile`, whose process-wide cache would keep every tenant's compiled pattern."""
    options = re2.Options()
    options.max_mem = memory
    options.case_sensitive = "i" not in flags
    options.dot_nl = "s" in flags
    options.log_errors = False
    return re2._Regexp(f"(?m){pattern}" if "m" in flags else pattern, options)


def pattern_problem(pattern: str, flags: str) -> str | None:
    """Why `pattern` cannot grade, in a sentence; None when RE2 compiles it within `MAX_PROGRAM` instructions."""
    return PatternBudget().problem(pattern, flags)


class PatternBudget:
    """What checking one suite's patterns may cost: `MAX_PATTERNS` patterns, each of at most `MAX_PROGRAM` RE2
    instructions, `MAX_PROGRAMS` in all, compiled within `COMPILE_BUDGET_S` seconds. Once it is spent, every further
    pattern is refused uncompiled, so a check never costs more than the budget whatever the suite holds."""

    def __init__(self) -> None:
        self.patterns = 0
        """Patterns offered so far."""
        self.programs = 0
        """RE2 instructions of the patterns compiled so far."""
        self.seconds = 0.0
        """Seconds spent compiling so far."""
        self.refused = 0
        """Patterns refused so far."""
        self.spent = False
        """Whether a suite-wide bound was passed, or `MAX_REFUSED` patterns were refused: nothing more is compiled."""

    def problem(self, pattern: str, flags: str) -> str | None:
        """Why `pattern` cannot grade, or why the suite's patterns may not grow by it, in a sentence; None when RE2
        compiles it and the suite's budget holds it."""
        if self.spent:
            return None  # the pattern that spent the budget was named; the rest are not compiled, nor each named again
        self.patterns += 1
        if self.patterns > MAX_PATTERNS:
            return self._spend(
                f"is pattern {self.patterns:,} of the suite, which may hold {MAX_PATTERNS:,}. Split the suite, "
                "or grade with exact or contains where no pattern is needed."
            )
        started = time.perf_counter()
        try:
            compiled, refused = compile_pattern(pattern, flags, CHECK_MEMORY), None
        except re2.error as e:
            compiled, refused = (
                None,
                (
                    f"is not a regular expression RE2 accepts ({_said(e)}). Tenant patterns are matched in "
                    "linear time, so backreferences and lookaround are refused, and a pattern must compile "
                    f"to at most {MAX_PROGRAM:,} instructions; write it without them, or with smaller "
                    "counted repeats and classes."
                ),
            )
        self.seconds += time.perf_counter() - started
        if compiled is not None and compiled.programsize > MAX_PROGRAM:
            refused = (
                f"compiles to {compiled.programsize:,} RE2 instructions, more than the {MAX_PROGRAM:,} a pattern may "
                "have. Write it with smaller counted repeats and classes (`\\pL` alone is some 1,300)."
            )
        if refused is not None:
            self.refused += 1
            self.spent = (
                self.refused >= MAX_REFUSED
            )  # the suite is refused already; its other patterns need no compiling
            return refused
        assert compiled is not None
        self.programs += compiled.programsize
        if self.programs > MAX_PROGRAMS:
            return self._spend(
                f"brings the suite's patterns to {self.programs:,} RE2 instructions, more than the "
                f"{MAX_PROGRAMS:,} one suite's may have in all. Split the suite, or write smaller patterns."
            )
        if self.seconds > COMPILE_BUDGET_S:
            return self._spend(
                f"brings the time the suite's patterns took to compile past {COMPILE_BUDGET_S:g} s, the "
                "budget of one suite. Split the suite, or write smaller patterns."
            )
        return None

    def _spend(self, reason: str) -> str:
        self.spent = True
        return reason


def _said(error: re2.error) -> str:
    """RE2's own words for what is wrong with a pattern (it gives them as bytes)."""
    said = error.args[0] if error.args else ""
    return said.decode("utf-8", "replace") if isinstance(said, bytes) else str(said)


def accuracy_criterion(expected_output: str) -> str:
    """The criterion the judge grades an item on: one text per expected output, so each item is graded on its own."""
    return f"The reply gives the expected output: {expected_output}"


def check_accuracy(case: AccuracyCase, messages: tuple[str, ...] | None, *, error: str | None) -> list[AssertionResult]:
    """An accuracy item's assertions: its deterministic grader's verdict, none for the judge (whose criterion grades
    it), or the one `agent_error` of a reply that never came."""
    if error is not None or messages is None:
        return [agent_failure(error)]
    return [] if case.grader.adapter == "judge" else [grade_reply(case, messages)]


def grade_reply(case: AccuracyCase, messages: tuple[str, ...] | list[str]) -> AssertionResult:
    """A deterministic grader's verdict on a reply, as the item's one assertion (never called for `judge`)."""
    text = joined_reply(messages)
    grader = case.grader
    if grader.adapter == "exact":
        held = text.strip() == case.expected_output.strip()
        detail = (
            "the reply is the expected output"
            if held
            else f"the reply is {quote(text.strip())}, not {quote(case.expected_output.strip())}"
        )
    elif grader.adapter == "contains":
        held = case.expected_output in text
        detail = f"{'found' if held else 'missing'} {quote(case.expected_output)}"
    elif grader.adapter == "regex":
        pattern = grader.pattern if grader.pattern is not None else case.expected_output
        try:
            held = compile_pattern(pattern, grader.flags).search(text) is not None
        except re2.error as e:  # checked at publish and as the run starts: only a machine short of memory gets here
            return AssertionResult(
                assertion=UNGRADABLE,
                held=False,
                detail=f"the pattern {quote(pattern)} did not compile here ({_said(e)}); ungraded",
            )
        detail = f"the pattern {quote(pattern)} {'matches' if held else 'does not match'} the reply"
    else:
        raise ValueError("the judge grades an accuracy item through its criterion, not here")
    return AssertionResult(assertion=GRADED, held=held, detail=detail)


Grade = Literal["correct", "wrong", "ungraded"]
"""An accuracy item's result: only correct and wrong items count towards the accuracy."""


def item_grade(assertions: list[tuple[str, bool]], judged: str | None) -> Grade:
    """An item's grade from its recorded assertions (name, held) and, for the judge grader, its criterion's verdict.

    An agent error or a grader that could not decide is ungraded (failing closed keeps it out of `correct`,
    docs/design.md#fail-closed, and it is not a wrong answer either); the judge's `ungraded` (uncalibrated group,
    invalid samples) likewise.
    """
    names = {name for name, _ in assertions}
    if names - {GRADED}:
        return "ungraded"
    if judged is not None:
        return {"pass": "correct", "fail": "wrong"}.get(judged, "ungraded")  # type: ignore[return-value]
    held = [h for name, h in assertions if name == GRADED]
    if not held:
        return "ungraded"
    return "correct" if all(held) else "wrong"

"""The `accuracy` kind: input -> expectedOutput pairs graded by an adapter, reported as a proportion with its interval.

`spec` = `{"cases": [{"id"?, "input", "expectedOutput"}], "grader"?: {"adapterId", "config"?}, "calibration"?: [...]}`.
`input` is the contact's message, or a turn `{"text", "history"?, "contact"?}` in the conversation format. Graders:
`exact`, `contains`, `regex` (config `{"pattern"?, "flags"?}`; without a pattern each expectedOutput is its item's)
and `judge` (the calibrated judge, in the `accuracy` calibration group, whose hand-labelled items are
`{"id"?, "input", "expectedOutput", "reply": [...], "label": "pass" | "fail"}`). An item without an id is
`item-<n>`, its 1-based place. The suite is written out as accuracy items the chain runs. Pure: reads no file.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from kindgi_eval.registry import Catalogue, Consumer, FolderContent, jsonl, problem_line
from kindgi_eval.rules import (
    GRADERS,
    AccuracyCase,
    CalibrationItem,
    Case,
    Contact,
    Grader,
    Label,
    PatternBudget,
    Problem,
    Turn,
    accuracy_criterion,
    problems_from_validation,
)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class InputTurn(_Strict):
    """An item's input given as a turn: the contact's message, and optionally the conversation before it."""

    text: str
    history: tuple[Turn, ...] = ()
    contact: Contact | None = None


class Item(_Strict):
    """One accuracy item as published (the input is checked on its own, so its errors name its own fields)."""

    id: str | None = Field(default=None, min_length=1)
    input: Any
    expectedOutput: str


class CalibrationPair(Item):
    """A hand-written reply to an accuracy item with a person's label: does it give the expected output?"""

    reply: tuple[str, ...] = Field(min_length=1)
    label: Label


class GraderRef(_Strict):
    """The grader as published: an adapter and its configuration."""

    adapterId: Literal["exact", "contains", "regex", "judge"]
    config: dict[str, Any] | None = None


class RegexConfig(_Strict):
    """The regex adapter's configuration."""

    pattern: str | None = None
    flags: str = ""


SPEC_KEYS = ("cases", "grader", "calibration")


def read_accuracy(
    spec: Mapping[str, Any], *, patterns: bool = True
) -> tuple[list[AccuracyCase], list[CalibrationItem], list[Problem]]:
    """The accuracy items and calibration items of `spec`, and every problem, each naming its path in `spec`; without
    `patterns`, no pattern is compiled (a spec that passed the check once)."""
    problems = [
        Problem("spec", None, key, f"unknown field. An accuracy suite's spec holds only {', '.join(SPEC_KEYS)}.")
        for key in sorted(set(spec) - set(SPEC_KEYS))
    ]
    budget = PatternBudget() if patterns else None
    grader = _grader(spec.get("grader"), problems, budget)
    cases = _items(spec, "cases", Item, problems, required=True)
    pairs = _items(spec, "calibration", CalibrationPair, problems, required=False)
    if budget is not None and grader is not None and grader.adapter == "regex" and grader.pattern is None:
        for index, item in cases:
            reason = budget.problem(item.expectedOutput, grader.flags)
            if reason:
                problems.append(
                    Problem(
                        "spec",
                        None,
                        f"cases[{index}].expectedOutput",
                        f"{reason} Without grader.config.pattern each expectedOutput is its item's pattern.",
                    )
                )
    if pairs and (grader is None or grader.adapter != "judge"):
        problems.append(
            Problem(
                "spec",
                None,
                "calibration",
                "calibration items grade the judge, and this suite's grader is not the judge. Drop them or set grader.adapterId to judge.",
            )
        )
    built: list[AccuracyCase] = []
    ids: dict[str, int] = {}
    for index, item in cases:
        case = _case(index, item, grader or Grader(), problems)
        if case is not None and unique(case.id, index, "cases", ids, problems):
            built.append(case)
    calibration: list[CalibrationItem] = []
    pair_ids: dict[str, int] = {}
    for index, pair in pairs:
        item = _calibration(index, pair, problems)
        if item is not None and unique(item.id, index, "calibration", pair_ids, problems):
            calibration.append(item)
    return built, calibration, problems


def accuracy_problems(spec: Mapping[str, Any], catalogue: Catalogue) -> list[str]:
    """The `accuracy` consumer's check: every problem of `spec` as one line."""
    return [problem_line(p) for p in read_accuracy(spec)[2]]


def accuracy_folder(spec: Mapping[str, Any], catalogue: Catalogue) -> FolderContent:
    """An accuracy suite as a folder: cases.jsonl of accuracy items and, for the judge, its calibration.jsonl."""
    cases, calibration, _ = read_accuracy(spec, patterns=False)
    files = {"cases.jsonl": jsonl(c.model_dump(mode="json", exclude_defaults=True) for c in cases)}
    if "calibration" in spec:
        files["calibration.jsonl"] = jsonl(i.model_dump(mode="json", exclude_defaults=True) for i in calibration)
    return FolderContent(files, {})


def _grader(value: object, problems: list[Problem], budget: PatternBudget | None) -> Grader | None:
    if value is None:
        return Grader()
    try:
        ref = GraderRef.model_validate_json(json.dumps(value))
    except ValidationError as e:
        if any(err["loc"][:1] == ("adapterId",) and err["type"] == "literal_error" for err in e.errors()):
            given = value.get("adapterId") if isinstance(value, dict) else None
            problems.append(
                Problem(
                    "spec",
                    None,
                    "grader.adapterId",
                    f"unknown grader adapter {given!r}; this server grades with {', '.join(GRADERS)}.",
                )
            )
        problems.extend(under("grader", p) for p in problems_from_validation(e, "spec", None) if p.field != "adapterId")
        return None
    config = ref.config or {}
    if ref.adapterId != "regex":
        if config:
            problems.append(
                Problem(
                    "spec",
                    None,
                    "grader.config",
                    f"the {ref.adapterId} adapter takes no configuration; drop grader.config.",
                )
            )
        return Grader(adapter=ref.adapterId)
    try:
        regex_config = RegexConfig.model_validate(config)
    except ValidationError as e:
        problems.extend(under("grader.config", p) for p in problems_from_validation(e, "spec", None))
        return None
    try:
        grader = Grader(adapter="regex", pattern=regex_config.pattern, flags=regex_config.flags)
    except ValidationError as e:
        problems.extend(under("grader.config", p) for p in problems_from_validation(e, "spec", None))
        return None
    if budget is not None and grader.pattern is not None:
        reason = budget.problem(grader.pattern, grader.flags)
        if reason:
            problems.append(Problem("spec", None, "grader.config.pattern", reason))
    return grader


def _items(
    spec: Mapping[str, Any], key: str, model: type[Item], problems: list[Problem], *, required: bool
) -> list[tuple[int, Any]]:
    value = spec.get(key)
    if value is None:
        if required:
            problems.append(
                Problem("spec", None, key, "required field is missing. Give the items as a list of objects.")
            )
        return []
    if not isinstance(value, list):
        problems.append(Problem("spec", None, key, "must be a list of objects."))
        return []
    if required and not value:
        problems.append(Problem("spec", None, key, "holds no items. Give at least one."))
    parsed = []
    for index, data in enumerate(value):
        try:
            parsed.append((index, model.model_validate_json(json.dumps(data))))
        except ValidationError as e:
            problems.extend(under(f"{key}[{index}]", p) for p in problems_from_validation(e, "spec", None))
    return parsed


def input_turn(where: str, value: object, problems: list[Problem]) -> InputTurn | None:
    """An item's input as a turn: a string is the contact's message of a new conversation."""
    if isinstance(value, str):
        return InputTurn(text=value)
    if not isinstance(value, dict):
        problems.append(
            Problem(
                "spec",
                None,
                where,
                "must be the contact's message (a string) or a turn object {text, history?, contact?}.",
            )
        )
        return None
    try:
        return InputTurn.model_validate_json(json.dumps(value))
    except ValidationError as e:
        problems.extend(under(where, p) for p in problems_from_validation(e, "spec", None))
        return None


def _case(index: int, item: Item, grader: Grader, problems: list[Problem]) -> AccuracyCase | None:
    turn = input_turn(f"cases[{index}].input", item.input, problems)
    if turn is None:
        return None
    return AccuracyCase(
        id=item.id or f"item-{index + 1}",
        text=turn.text,
        history=turn.history,
        contact=turn.contact,
        expected_output=item.expectedOutput,
        grader=grader,
    )


def _calibration(index: int, pair: CalibrationPair, problems: list[Problem]) -> CalibrationItem | None:
    turn = input_turn(f"calibration[{index}].input", pair.input, problems)
    if turn is None:
        return None
    return CalibrationItem(
        id=pair.id or f"item-{index + 1}",
        history=turn.history,
        text=turn.text,
        reply=pair.reply,
        criterion=accuracy_criterion(pair.expectedOutput),
        label=pair.label,
    )


def unique(item_id: str, index: int, key: str, seen: dict[str, int], problems: list[Problem]) -> bool:
    if item_id in seen:
        problems.append(
            Problem(
                "spec",
                None,
                f"{key}[{index}].id",
                f"duplicate id {item_id!r}, first used as {key}[{seen[item_id]}]. Ids must be unique in spec.{key}.",
            )
        )
        return False
    seen[item_id] = index
    return True


def under(prefix: str, problem: Problem) -> Problem:
    field = (
        f"{prefix}.{problem.field}"
        if problem.field and not problem.field.startswith("[")
        else f"{prefix}{problem.field or ''}"
    )
    return Problem(problem.file, problem.line, field, problem.message)


def accuracy_cases(spec: Mapping[str, Any]) -> list[tuple[str, Case]]:
    """A checked accuracy spec's items as the run reads them, each with its place (`spec.cases[3]`)."""
    return [(f"spec.cases[{index}]", case) for index, case in enumerate(read_accuracy(spec, patterns=False)[0])]


CONSUMER = Consumer("accuracy", accuracy_problems, "kindgi-eval run", accuracy_folder, cases=accuracy_cases)
"""What the registry checks a published `spec` of this kind with, and the suite folder it writes it out as."""

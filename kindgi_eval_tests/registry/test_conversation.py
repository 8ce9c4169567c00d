"""A `conversation` suite's spec is checked by the very code that reads a suite folder, with paths for names."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kindgi_eval.inputs import check_suite_items, load_suite
from kindgi_eval.kinds import models_of
from kindgi_eval.registry import read_conversation
from kindgi_eval.rules import InputError
from kindgi_eval_tests.conftest import GOLDEN
from kindgi_eval_tests.registry.conftest import golden_spec

GOOD = {"id": "ok", "text": "hi", "expect": {"escalate": False}}
BAD_CASES = [
    {**GOOD, "id": "typo", "must_contains": ["x"]},  # unknown field
    {**GOOD, "id": "reason", "expect": {"escalate": False, "reason": "refund_request"}},  # a reason needs escalate
    {**GOOD, "id": "lines", "max_lines": 0},
    {**GOOD, "id": "review", "review": ["warm", "warm"]},  # a repeated review entry
    {**GOOD, "id": "ok"},  # a duplicate id
    ["not", "an", "object"],
]


def test_the_golden_suite_is_a_valid_conversation_spec() -> None:
    items = read_conversation(golden_spec())
    assert items.problems == ()
    assert [c.id for c in items.cases] == [c.id for c in load_suite(GOLDEN, models_of=models_of).cases]


def test_a_spec_and_a_suite_folder_give_the_same_problems(tmp_path: Path) -> None:
    (tmp_path / "cases.jsonl").write_text("\n".join(json.dumps(c) for c in [GOOD, *BAD_CASES]) + "\n")
    with pytest.raises(InputError) as folder:
        load_suite(tmp_path, models_of=models_of)
    listed = check_suite_items([GOOD, *BAD_CASES]).problems
    # the same fields and the same words; a line of a file is an index of the list (line n is cases[n-1])
    by_line = [(p.line, p.field, p.message) for p in folder.value.problems]
    by_index = [
        (int(p.field.split("]")[0].removeprefix("cases[")) + 1, p.field.partition("].")[2] or None, p.message)
        for p in listed
    ]

    def same_words(message: str) -> str:
        return (
            message.replace("on line 1", "as cases[0]")
            .replace("in a file", "in spec.cases")
            .replace("each line", "each item")
        )

    assert [(line, field, same_words(message)) for line, field, message in by_line] == by_index
    assert {p.file for p in listed} == {"spec"}


def test_problems_name_the_case_index_and_field() -> None:
    paths = [p.field for p in read_conversation({"cases": [GOOD, *BAD_CASES]}).problems]
    assert paths == [
        "cases[1].must_contains",
        "cases[2].expect.reason",
        "cases[3].max_lines",
        "cases[4].review[1]",
        "cases[5].id",
        "cases[6]",
    ]


def test_calibration_items_are_checked_too() -> None:
    spec = golden_spec()
    spec["calibration"][0] = {**spec["calibration"][0], "label": "maybe", "reply": []}
    assert sorted(p.field for p in read_conversation(spec).problems) == ["calibration[0].label", "calibration[0].reply"]


def test_calibration_may_be_absent_but_cases_may_not() -> None:
    assert read_conversation({"cases": [GOOD]}).problems == ()
    (problem,) = read_conversation({"calibration": []}).problems
    assert (problem.field, problem.message.split(".")[0]) == ("cases", "required field is missing")

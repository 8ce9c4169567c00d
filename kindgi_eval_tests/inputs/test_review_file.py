"""Reading a filled-in review file: rows by the line they start on, unlabelled rows skipped, every problem named."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kindgi_eval.inputs import LabelLine, QueueKeys, check_labels, read_label_file
from kindgi_eval.rules import InputError

HEADER = "run_id,case_id,rubric_item,reviewer_role,history,message,reply,reviewer,label,note\n"


def written(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_a_csv_row_is_named_by_the_line_it_starts_on_though_a_cell_spans_lines(tmp_path) -> None:
    path = written(
        tmp_path,
        "r.csv",
        HEADER
        + 'r1,a,tone,lead,,hi,"first message\n\nsecond message",ana,pass,\n'  # lines 2-4
        + 'r1,b,tone,lead,,hi,"one\ntwo",,,\n'  # lines 5-6: unlabelled, skipped
        + "r1,c,tone,lead,,hi,x,, maybe ,\n",
    )  # line 7
    found = read_label_file(path)
    assert [(line.line, line.case_id, line.label, line.reviewer) for line in found.lines] == [(2, "a", "pass", "ana")]
    assert found.unlabelled == 1
    assert [str(p) for p in found.problems] == [f"{path}:7: field label: 'maybe' is not a label. Write pass or fail."]


def test_a_row_labelled_twice_is_a_problem_of_the_second(tmp_path) -> None:
    path = written(tmp_path, "r.csv", HEADER + "r1,a,tone,,,,,,pass,\n" + "r1,a,tone,,,,,,fail,\n")
    (problem,) = read_label_file(path).problems
    assert (problem.line, problem.field) == (3, "rubric_item") and "labelled already, on line 2" in problem.message


def test_a_jsonl_row_without_a_column_or_with_a_number_is_named_by_line_and_field(tmp_path) -> None:
    rows = [
        {"run_id": "r1", "case_id": "a", "rubric_item": "tone", "label": "pass"},  # no note
        {"run_id": "r1", "case_id": "b", "rubric_item": "tone", "label": 1, "note": ""},
        {"run_id": "r1", "case_id": "c", "rubric_item": "tone", "label": None, "note": ""},
    ]  # unlabelled
    path = written(tmp_path, "r.jsonl", "".join(json.dumps(r) + "\n" for r in rows) + "[1]\n")
    found = read_label_file(path)
    assert [(p.line, p.field) for p in found.problems] == [(1, "note"), (2, "label"), (4, None)]
    assert found.unlabelled == 1 and found.lines == ()


def test_a_file_that_labels_nothing_is_refused(tmp_path) -> None:
    with pytest.raises(InputError, match="no row is labelled"):
        read_label_file(written(tmp_path, "r.csv", HEADER + "r1,a,tone,,,,,,,\n"))


def test_labels_are_checked_against_the_review_queues() -> None:
    labels = (
        LabelLine(2, "r1", "a", "tone", None, "pass", ""),
        LabelLine(3, "r1", "a", "warmth", None, "pass", ""),
        LabelLine(4, "r2", "a", "tone", None, "pass", ""),
        LabelLine(5, "r3", "a", "tone", None, "fail", ""),
    )
    queues = {
        "r1": QueueKeys(frozenset({"a"}), frozenset({("a", "tone")})),
        "r2": None,
        "r3": QueueKeys(frozenset(), frozenset()),
    }
    assert [(p.line, p.field) for p in check_labels("f.csv", labels, queues)] == [
        (3, "rubric_item"),
        (4, "run_id"),
        (5, "run_id"),
    ]

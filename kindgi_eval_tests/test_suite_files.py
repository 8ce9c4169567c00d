"""Suite files: every committed suite parses, and every kind of bad suite is refused with a clear error."""

from __future__ import annotations

from pathlib import Path

import pytest

from kindgi_eval.errors import InputError
from kindgi_eval.suite_files import load_suite, suite_key

from .conftest import REPO, files_under, run_cli

SUITES = sorted(p.parent for p in (REPO / "evals").glob("*/cases.jsonl"))
GOOD = '{"id": "ok", "text": "hi", "expect": {"escalate": false}}'


@pytest.mark.parametrize("folder", SUITES, ids=[p.name for p in SUITES])
def test_every_committed_suite_parses_009(folder: Path) -> None:
    suite = load_suite(folder)
    assert suite.cases


def test_suites_are_found() -> None:
    assert REPO / "evals" / "golden" in SUITES


def test_case_without_history_parses_with_empty_history_009(tmp_path: Path) -> None:
    (tmp_path / "cases.jsonl").write_text(GOOD + "\n")
    (case,) = load_suite(tmp_path).cases
    assert case.history == ()


def test_golden_set_holds_a_case_without_history_key_009() -> None:
    lines = (REPO / "evals/golden/cases.jsonl").read_text().splitlines()
    assert any('"history"' not in line for line in lines if line.strip())


def test_blank_lines_are_skipped_and_lines_counted(tmp_path: Path) -> None:
    (tmp_path / "cases.jsonl").write_text("\n" + GOOD + "\n\n")
    suite = load_suite(tmp_path)
    assert suite.case_lines == (2,)


def test_review_string_and_one_entry_list_parse_alike_016(tmp_path: Path) -> None:
    (tmp_path / "cases.jsonl").write_text(
        '{"id": "a", "text": "hi", "expect": {"escalate": false}, "review": "warm"}\n'
        '{"id": "b", "text": "hi", "expect": {"escalate": false}, "review": ["warm"]}\n'
    )
    a, b = load_suite(tmp_path).cases
    assert a.review_criteria == b.review_criteria == ("warm",)


def test_hash_follows_content_not_path(tmp_path: Path) -> None:
    for name in ("one", "two"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "cases.jsonl").write_text(GOOD + "\n")
    assert load_suite(tmp_path / "one").hash == load_suite(tmp_path / "two").hash
    (tmp_path / "two" / "calibration.jsonl").write_text("")
    assert load_suite(tmp_path / "one").hash != load_suite(tmp_path / "two").hash


def test_suite_key_names_tenant_and_folder() -> None:
    assert suite_key("demo-academy", "evals/golden") == "demo-academy.golden"
    assert suite_key("t", "/x/My Suite!") == "t.my-suite"


# name, cases.jsonl content, the line the error must name, the field it must name (None: no field applies)
BAD = [
    ("bad-json", GOOD + '\n{"id": "b", "text": \n', 2, None),
    ("missing-field", GOOD + '\n{"id": "b", "expect": {"escalate": false}}\n', 2, "text"),
    ("typo-field", '{"id": "a", "text": "hi", "expect": {"escalate": false}, "must_contains": ["x"]}\n', 1, "must_contains"),
    ("wrong-type", '{"id": "a", "text": "hi", "expect": {"escalate": "no"}}\n', 1, "expect.escalate"),
    ("wrong-nested-type", '{"id": "a", "text": "hi", "expect": {"escalate": false}, "history": [{"role": "bot", "text": "x"}]}\n', 1, "history[0].role"),
    ("duplicate-id", GOOD + "\n" + GOOD + "\n", 2, "id"),
    ("reason-without-escalation", '{"id": "a", "text": "hi", "expect": {"escalate": false, "reason": "refund_request"}}\n', 1, "expect.reason"),
    ("empty-review-list", '{"id": "a", "text": "hi", "expect": {"escalate": false}, "review": []}\n', 1, "review"),
    ("not-an-object", "[1, 2]\n", 1, None),
    ("empty-file", "", None, None),
]


@pytest.mark.parametrize(("name", "content", "line", "field"), BAD, ids=[b[0] for b in BAD])
def test_bad_suite_is_refused_with_file_line_field_and_nothing_written(
    tmp_path: Path, home, name: str, content: str, line: int | None, field: str | None
) -> None:
    suite = tmp_path / name
    suite.mkdir()
    (suite / "cases.jsonl").write_text(content)
    result = run_cli("run", "--mock", "--eval-dir", str(suite))
    assert result.code == 2
    assert "Traceback" not in result.err
    (message,) = result.err.strip().splitlines()
    where = f"{suite / 'cases.jsonl'}:{line}:" if line else f"{suite / 'cases.jsonl'}:"
    assert message.startswith(f"error: {where}")
    if field:
        assert f" field {field}: " in message
    assert result.out == ""
    assert files_under(home.root) == []


def test_unreadable_suite_is_refused(tmp_path: Path, home) -> None:
    (tmp_path / "cases.jsonl").mkdir()  # a folder where the file should be: cannot be read
    result = run_cli("run", "--mock", "--eval-dir", str(tmp_path))
    assert result.code == 2 and "Traceback" not in result.err
    assert result.err.startswith(f"error: {tmp_path / 'cases.jsonl'}: cannot be read")
    assert files_under(home.root) == []


def test_missing_suite_folder_is_refused(tmp_path: Path, home) -> None:
    result = run_cli("run", "--mock", "--eval-dir", str(tmp_path / "nowhere"))
    assert result.code == 2
    assert result.err == f"error: {tmp_path / 'nowhere'}: no such suite folder. Point EVAL_DIR or --eval-dir at a folder holding cases.jsonl.\n"
    assert files_under(home.root) == []


def test_every_problem_in_a_file_is_reported_at_once(tmp_path: Path) -> None:
    (tmp_path / "cases.jsonl").write_text('{"id": "a"}\n{bad\n' + GOOD + "\n")
    with pytest.raises(InputError) as raised:
        load_suite(tmp_path)
    assert [(p.line, p.field) for p in raised.value.problems] == [(1, "text"), (1, "expect"), (2, None)]


def test_validate_reports_every_folder(tmp_path: Path) -> None:
    (tmp_path / "cases.jsonl").write_text('{"id": "a"}\n')
    result = run_cli("validate", str(REPO / "evals/golden"), str(tmp_path))
    assert result.code == 2
    assert result.out.startswith(f"ok: {REPO / 'evals/golden'}: ")
    assert result.err.count("error: ") == 2


def test_validate_accepts_the_golden_set() -> None:
    result = run_cli("validate")
    assert result.code == 0, result.err
    assert result.out.startswith("ok: evals/golden: ")


CALIBRATIONS = sorted((REPO / "evals").glob("*/calibration.jsonl"))


@pytest.mark.parametrize("path", CALIBRATIONS, ids=[p.parent.name for p in CALIBRATIONS])
def test_every_calibration_set_parses_and_each_group_holds_both_labels_016(path: Path) -> None:
    from kindgi_eval.criteria import GROUPS, group_of

    items = load_suite(path.parent).calibration
    labels = {group: {i.label for i in items if group_of(i.criterion) == group} for group in GROUPS}
    assert labels == {group: {"pass", "fail"} for group in GROUPS}


def test_golden_calibration_holds_a_reply_addressing_the_judge_016() -> None:
    items = load_suite(REPO / "evals/golden").calibration
    addressing = [i for i in items if "grader" in " ".join(i.reply).lower()]
    assert addressing and all(i.label == "fail" for i in addressing)
    assert len(items) >= 12 and {i.id for i in items} >= {"concession-addresses-the-grader"}


def test_a_case_naming_an_unknown_stage_or_course_is_refused(tmp_path: Path, home) -> None:
    (tmp_path / "cases.jsonl").write_text(
        GOOD + "\n"
        '{"id": "b", "text": "hi", "expect": {"escalate": false}, "contact": {"funnel_stage": "ofer", "course": "pottery"}}\n'
    )
    result = run_cli("run", "--mock", "--eval-dir", str(tmp_path))
    assert result.code == 2
    stage, course = result.err.splitlines()
    assert stage.startswith(f"error: {tmp_path / 'cases.jsonl'}:2: field contact.funnel_stage: 'ofer' is not a funnel stage")
    assert course.startswith(f"error: {tmp_path / 'cases.jsonl'}:2: field contact.course: 'pottery' is not a course")
    assert files_under(home.root) == []

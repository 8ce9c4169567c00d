"""Suite files: every committed suite parses, and every kind of bad suite is refused with a clear error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kindgi_eval.inputs.suite_folder import TenantNames, load_suite, suite_key
from kindgi_eval.kinds import models_of
from kindgi_eval.rules.errors import InputError
from kindgi_eval_tests.conftest import REPO, files_under, run_cli

SUITES = sorted(p.parent for p in (REPO / "evals").glob("*/cases.jsonl"))
GOOD = '{"id": "ok", "text": "hi", "expect": {"escalate": false}}'


@pytest.mark.parametrize("folder", SUITES, ids=[p.name for p in SUITES])
def test_every_committed_suite_parses_009(folder: Path) -> None:
    suite = load_suite(folder, models_of=models_of)
    assert suite.cases


def test_suites_are_found() -> None:
    assert REPO / "evals" / "golden" in SUITES


def test_case_without_history_parses_with_empty_history_009(tmp_path: Path) -> None:
    (tmp_path / "cases.jsonl").write_text(GOOD + "\n")
    (case,) = load_suite(tmp_path, models_of=models_of).cases
    assert case.history == ()


def test_golden_set_holds_a_case_without_history_key_009() -> None:
    lines = (REPO / "evals/golden/cases.jsonl").read_text().splitlines()
    assert any('"history"' not in line for line in lines if line.strip())


def test_blank_lines_are_skipped_and_lines_counted(tmp_path: Path) -> None:
    (tmp_path / "cases.jsonl").write_text("\n" + GOOD + "\n\n")
    suite = load_suite(tmp_path, models_of=models_of)
    assert suite.case_lines == (2,)


def test_review_string_and_one_entry_list_parse_alike_016(tmp_path: Path) -> None:
    (tmp_path / "cases.jsonl").write_text(
        '{"id": "a", "text": "hi", "expect": {"escalate": false}, "review": "warm"}\n'
        '{"id": "b", "text": "hi", "expect": {"escalate": false}, "review": ["warm"]}\n'
    )
    a, b = load_suite(tmp_path, models_of=models_of).cases
    assert a.review_criteria == b.review_criteria == ("warm",)


def test_hash_follows_content_not_path(tmp_path: Path) -> None:
    for name in ("one", "two"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "cases.jsonl").write_text(GOOD + "\n")
    assert (
        load_suite(tmp_path / "one", models_of=models_of).hash == load_suite(tmp_path / "two", models_of=models_of).hash
    )
    (tmp_path / "two" / "calibration.jsonl").write_text("")
    assert (
        load_suite(tmp_path / "one", models_of=models_of).hash != load_suite(tmp_path / "two", models_of=models_of).hash
    )


def test_suite_key_names_tenant_and_folder() -> None:
    assert suite_key("demo-academy", "evals/golden") == "demo-academy.golden"
    assert suite_key("t", "/x/My Suite!") == "t.my-suite"


# name, cases.jsonl content, the line the error must name, the field it must name (None: no field applies)
BAD = [
    ("bad-json", GOOD + '\n{"id": "b", "text": \n', 2, None),
    ("missing-field", GOOD + '\n{"id": "b", "expect": {"escalate": false}}\n', 2, "text"),
    (
        "typo-field",
        '{"id": "a", "text": "hi", "expect": {"escalate": false}, "must_contains": ["x"]}\n',
        1,
        "must_contains",
    ),
    ("wrong-type", '{"id": "a", "text": "hi", "expect": {"escalate": "no"}}\n', 1, "expect.escalate"),
    (
        "wrong-nested-type",
        '{"id": "a", "text": "hi", "expect": {"escalate": false}, "history": [{"role": "bot", "text": "x"}]}\n',
        1,
        "history[0].role",
    ),
    ("duplicate-id", GOOD + "\n" + GOOD + "\n", 2, "id"),
    (
        "reason-without-escalation",
        '{"id": "a", "text": "hi", "expect": {"escalate": false, "reason": "refund_request"}}\n',
        1,
        "expect.reason",
    ),
    ("empty-review-list", '{"id": "a", "text": "hi", "expect": {"escalate": false}, "review": []}\n', 1, "review"),
    # A repeat would pool six judge samples under one criterion: named by the index of the repeat.
    (
        "repeated-review-entry",
        '{"id": "a", "text": "hi", "expect": {"escalate": false}, "review": ["x", "x"]}\n',
        1,
        "review[1]",
    ),
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
    assert (
        result.err
        == f"error: {tmp_path / 'nowhere'}: no such suite folder. Point EVAL_DIR or --eval-dir at a folder holding cases.jsonl.\n"
    )
    assert files_under(home.root) == []


def test_every_problem_in_a_file_is_reported_at_once(tmp_path: Path) -> None:
    (tmp_path / "cases.jsonl").write_text('{"id": "a"}\n{bad\n' + GOOD + "\n")
    with pytest.raises(InputError) as raised:
        load_suite(tmp_path, models_of=models_of)
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
    from kindgi_eval.rules.criteria import GROUPS, group_of

    items = load_suite(path.parent, models_of=models_of).calibration
    labels = {group: {i.label for i in items if group_of(i.criterion) == group} for group in GROUPS}
    assert labels == {group: {"pass", "fail"} for group in GROUPS}


def test_golden_calibration_holds_a_reply_addressing_the_judge_016() -> None:
    items = load_suite(REPO / "evals/golden", models_of=models_of).calibration
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
    assert stage.startswith(
        f"error: {tmp_path / 'cases.jsonl'}:2: field contact.funnel_stage: 'ofer' is not a funnel stage"
    )
    assert course.startswith(f"error: {tmp_path / 'cases.jsonl'}:2: field contact.course: 'pottery' is not a course")
    assert files_under(home.root) == []


def test_every_repeated_review_entry_is_named_by_its_index_016(tmp_path: Path) -> None:
    (tmp_path / "cases.jsonl").write_text(
        GOOD + "\n"
        '{"id": "b", "text": "hi", "expect": {"escalate": false}, "review": ["warm", "short", "warm", "short", "warm"]}\n'
    )
    with pytest.raises(InputError) as raised:
        load_suite(tmp_path, models_of=models_of)
    path = str(tmp_path / "cases.jsonl")
    assert [str(p) for p in raised.value.problems] == [
        f"{path}:2: field review[2]: duplicate review entry 'warm', first given as review[0]. Give each criterion once per case.",
        f"{path}:2: field review[3]: duplicate review entry 'short', first given as review[1]. Give each criterion once per case.",
        f"{path}:2: field review[4]: duplicate review entry 'warm', first given as review[0]. Give each criterion once per case.",
    ]


def test_review_entries_that_differ_only_in_case_are_two_criteria(tmp_path: Path) -> None:
    # Entries are compared exactly, as the judge is given them verbatim.
    (tmp_path / "cases.jsonl").write_text(
        '{"id": "a", "text": "hi", "expect": {"escalate": false}, "review": ["Warm", "warm"]}\n'
    )
    (case,) = load_suite(tmp_path, models_of=models_of).cases
    assert case.review_criteria == ("Warm", "warm")


def test_validate_refuses_a_repeated_review_entry_016(tmp_path: Path, home) -> None:
    (tmp_path / "cases.jsonl").write_text(
        '{"id": "a", "text": "hi", "expect": {"escalate": false}, "review": ["x", "x"]}\n'
    )
    result = run_cli("validate", str(tmp_path))
    assert result.code == 2
    assert result.out == ""
    assert result.err == (
        f"error: {tmp_path / 'cases.jsonl'}:1: field review[1]: duplicate review entry 'x', first given as review[0]."
        " Give each criterion once per case.\n"
    )


def test_validate_reports_schema_and_tenant_problems_in_one_run(tmp_path: Path, home) -> None:
    # A schema error on line 1 no longer hides the unknown funnel stage on line 2 until it is fixed.
    (tmp_path / "cases.jsonl").write_text(
        '{"id": "a", "text": "hi", "expect": {"escalate": "no"}}\n'
        '{"id": "b", "text": "hi", "expect": {"escalate": false}, "contact": {"funnel_stage": "ofer"}}\n'
    )
    result = run_cli("validate", str(tmp_path))
    assert result.code == 2
    assert result.out == ""
    path = tmp_path / "cases.jsonl"
    schema, stage = result.err.splitlines()
    assert schema == f"error: {path}:1: field expect.escalate: input should be a valid boolean (got 'no')"
    assert stage.startswith(
        f"error: {path}:2: field contact.funnel_stage: 'ofer' is not a funnel stage of the tenant configuration "
    )
    assert stage.endswith("(stages: opening, discovery, offer, payment, enrolment).")


def test_run_reports_schema_and_tenant_problems_together_in_line_order(tmp_path: Path, home) -> None:
    (tmp_path / "cases.jsonl").write_text(
        '{"id": "a", "text": "hi", "expect": {"escalate": false}, "contact": {"course": "pottery"}}\n'
        '{"id": "b", "text": "hi", "expect": {"escalate": false}, "review": ["x", "x"], "contact": {"funnel_stage": "ofer"}}\n'
        '{"id": "c", "expect": {"escalate": false}}\n'
    )
    (tmp_path / "calibration.jsonl").write_text(
        '{"id": "k", "text": "hi", "reply": ["r"], "criterion": "warm", "label": "maybe"}\n'
    )
    result = run_cli("run", "--mock", "--eval-dir", str(tmp_path))
    assert result.code == 2 and "Traceback" not in result.err
    cases, calibration = tmp_path / "cases.jsonl", tmp_path / "calibration.jsonl"
    # "error: FILE:LINE: field FIELD: ..." -> (FILE:LINE:, FIELD:)
    located = [(words[1], words[3]) for words in (line.split(" ", 4) for line in result.err.splitlines())]
    assert located == [
        (f"{cases}:1:", "contact.course:"),
        (f"{cases}:2:", "review[1]:"),
        (f"{cases}:2:", "contact.funnel_stage:"),
        (f"{cases}:3:", "text:"),
        (f"{calibration}:1:", "label:"),
    ]
    assert result.out == ""
    assert files_under(home.root) == []


def test_load_suite_without_a_tenant_checks_no_stage_or_course(tmp_path: Path) -> None:
    # The suite asset and the schedules read suites on their own; the tenant check is the caller's choice.
    (tmp_path / "cases.jsonl").write_text(
        '{"id": "a", "text": "hi", "expect": {"escalate": false}, "contact": {"funnel_stage": "ofer"}}\n'
    )
    assert load_suite(tmp_path, models_of=models_of).cases[0].entry_stage == "ofer"
    names = TenantNames(("opening", "offer"), ("foundation",), "the tenant configuration t")
    with pytest.raises(InputError) as raised:
        load_suite(tmp_path, names, models_of=models_of)
    (problem,) = raised.value.problems
    assert str(problem) == (
        f"{tmp_path / 'cases.jsonl'}:1: field contact.funnel_stage: 'ofer' is not a funnel stage of the tenant configuration t"
        " (stages: opening, offer)."
    )


EARLIER_RECORD = {
    "suite_id": "demo-academy.ab",
    "suite_version": "1.0.0",
    "registry_hash": "ab" * 32,
    "kind": "pairwise",
    "baseline_run_id": None,
    "rubric": [],
    "variant_a_id": "current",
    "variant_a_version": "1",
    "variant_b_id": "challenger",
    "variant_b_version": "2",
}
"""A pairwise folder's `registry.json` as releases before `params` wrote it: each kind's parameter a field of its own."""


def test_a_registry_record_of_an_earlier_release_is_read_with_the_kind_s_parameters_in_params(tmp_path: Path) -> None:
    prompt = {"id": "price-a", "text": "hi", "prompt_id": "price", "variant": "A"}
    (tmp_path / "cases.jsonl").write_text(
        json.dumps(prompt) + "\n" + json.dumps({**prompt, "id": "price-b", "variant": "B"}) + "\n"
    )
    (tmp_path / "registry.json").write_text(json.dumps(EARLIER_RECORD))
    registered = load_suite(tmp_path, models_of=models_of).registered
    assert registered is not None and registered.params == {
        "variant_a_id": "current",
        "variant_a_version": "1",
        "variant_b_id": "challenger",
        "variant_b_version": "2",
    }
    assert registered.param("variant_b_id") == "challenger" and registered.param("baseline_run_id") is None


@pytest.mark.parametrize("params", [{"baseline_run_id": 5}, {"rubric": [["nested"]]}, {"reviewer_role": None}])
def test_a_kind_s_parameter_that_is_not_text_is_refused_naming_the_record(tmp_path: Path, params: dict) -> None:
    (tmp_path / "cases.jsonl").write_text(GOOD + "\n")
    record = {k: EARLIER_RECORD[k] for k in ("suite_id", "suite_version", "registry_hash")}
    (tmp_path / "registry.json").write_text(json.dumps({**record, "params": params}))
    with pytest.raises(InputError) as refused:
        load_suite(tmp_path, models_of=models_of)
    (problem,) = refused.value.problems
    assert (
        problem.file == str(tmp_path / "registry.json")
        and "is not the registry's record of this folder" in problem.message
    )


def test_validate_refuses_a_criterion_one_typo_from_a_fixed_one_naming_the_one_meant(tmp_path: Path) -> None:
    folder = tmp_path / "typos"
    folder.mkdir()
    (folder / "cases.jsonl").write_text(
        '{"id": "one", "text": "hi", "expect": {"escalate": false}, "review": ["Warm", "answers_the_questoin"]}\n'
    )
    (folder / "calibration.jsonl").write_text(
        '{"id": "c1", "text": "hi", "reply": ["Hello!"], "criterion": "implicit_concesion", "label": "pass"}\n'
    )
    done = run_cli("validate", str(folder))
    assert (done.code, done.out) == (2, "")
    assert done.err.splitlines() == [
        f"error: {folder}/cases.jsonl:1: field review: 'answers_the_questoin' is one typo from the fixed criterion "
        "'answers_the_question', so it would be graded as free text, in the free_text group. Write 'answers_the_question', "
        "or a free-text criterion in words.",
        f"error: {folder}/calibration.jsonl:1: field criterion: 'implicit_concesion' is one typo from the fixed criterion "
        "'implicit_concession', so it would be graded as free text, in the free_text group. Write 'implicit_concession', "
        "or a free-text criterion in words.",
    ]

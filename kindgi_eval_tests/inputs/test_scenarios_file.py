"""scenarios.jsonl in a suite folder: read beside or instead of cases.jsonl, every bad line refused by file, line and
field, ids unique across both files."""

from __future__ import annotations

from pathlib import Path

import pytest

from kindgi_eval.inputs.suite_folder import folder_hash, load_suite
from kindgi_eval.kinds import models_of
from kindgi_eval.rules.errors import InputError
from kindgi_eval_tests.conftest import files_under, run_cli

CASE = '{"id": "c1", "text": "hi", "expect": {"escalate": false}}'
SCENARIO = '{"id": "s1", "moves": ["how much?", "too expensive"], "expect": {"escalate": false}}'


def test_a_folder_may_hold_scenarios_beside_cases_or_instead(tmp_path: Path) -> None:
    both, alone = tmp_path / "both", tmp_path / "alone"
    for folder in (both, alone):
        folder.mkdir()
        (folder / "scenarios.jsonl").write_text("\n" + SCENARIO + "\n")
    (both / "cases.jsonl").write_text(CASE + "\n")
    read = load_suite(both, models_of=models_of)
    assert ([c.id for c in read.cases], [s.id for s in read.scenarios], read.scenario_lines) == (["c1"], ["s1"], (2,))
    read = load_suite(alone, models_of=models_of)
    assert (read.cases, [s.moves for s in read.scenarios]) == ((), [("how much?", "too expensive")])


def test_scenarios_change_the_folder_hash_and_their_absence_keeps_the_old_one(tmp_path: Path) -> None:
    (tmp_path / "cases.jsonl").write_text(CASE + "\n")
    before = load_suite(tmp_path, models_of=models_of).hash
    assert before == folder_hash({"cases.jsonl": (CASE + "\n").encode(), "calibration.jsonl": None})
    (tmp_path / "scenarios.jsonl").write_text(SCENARIO + "\n")
    assert load_suite(tmp_path, models_of=models_of).hash != before


def test_an_id_is_unique_across_cases_and_scenarios(tmp_path: Path) -> None:
    (tmp_path / "cases.jsonl").write_text(CASE + "\n")
    (tmp_path / "scenarios.jsonl").write_text(SCENARIO.replace('"s1"', '"c1"') + "\n")
    with pytest.raises(InputError) as raised:
        load_suite(tmp_path, models_of=models_of)
    (problem,) = raised.value.problems
    assert str(problem) == (
        f"{tmp_path / 'scenarios.jsonl'}:1: field id: duplicate id 'c1', first used in cases.jsonl on "
        "line 1. Ids must be unique across a suite folder's cases and scenarios."
    )


def test_a_folder_with_neither_file_names_cases_jsonl(tmp_path: Path) -> None:
    with pytest.raises(InputError) as raised:
        load_suite(tmp_path, models_of=models_of)
    assert "cases.jsonl: file not found" in str(raised.value)


def test_a_scenario_naming_a_stage_the_tenant_lacks_is_refused(tmp_path: Path) -> None:
    (tmp_path / "scenarios.jsonl").write_text(
        SCENARIO.replace('"moves"', '"contact": {"funnel_stage": "nowhere"}, "moves"') + "\n"
    )
    result = run_cli("validate", str(tmp_path))
    assert result.code == 2
    assert (
        f"{tmp_path / 'scenarios.jsonl'}:1: field contact.funnel_stage: 'nowhere' is not a funnel stage" in result.err
    )


BAD = [
    (
        "both-sides",
        '{"id": "a", "moves": ["x"], "persona": "p", "goal": "g", "expect": {"escalate": false}}',
        "persona",
    ),
    ("neither-side", '{"id": "a", "expect": {"escalate": false}}', "moves"),
    (
        "too-many-turns",
        '{"id": "a", "persona": "p", "goal": "g", "max_turns": 21, "expect": {"escalate": false}}',
        "max_turns",
    ),
    (
        "reason-without-escalation",
        '{"id": "a", "moves": ["x"], "expect": {"escalate": false, "reason": "r"}}',
        "expect.reason",
    ),
    ("unknown-field", '{"id": "a", "moves": ["x"], "expect": {"escalate": false}, "turns": 3}', "turns"),
    ("no-expect", '{"id": "a", "moves": ["x"]}', "expect"),
]


@pytest.mark.parametrize(("name", "line", "field"), BAD, ids=[b[0] for b in BAD])
def test_a_bad_scenario_is_exit_2_naming_file_line_and_field_and_nothing_is_written(
    tmp_path: Path, home, name: str, line: str, field: str
) -> None:
    (tmp_path / "cases.jsonl").write_text(CASE + "\n")
    (tmp_path / "scenarios.jsonl").write_text(SCENARIO + "\n" + line + "\n")
    result = run_cli("run", "--mock", "--eval-dir", str(tmp_path))
    assert result.code == 2 and "Traceback" not in result.err
    (message,) = result.err.strip().splitlines()
    assert message.startswith(f"error: {tmp_path / 'scenarios.jsonl'}:2: field {field}: "), message
    assert result.out == ""
    assert files_under(home.root) == []
    checked = run_cli("validate", str(tmp_path))
    assert checked.code == 2 and checked.err == result.err


def test_validate_counts_the_scenarios(tmp_path: Path) -> None:
    (tmp_path / "cases.jsonl").write_text(CASE + "\n")
    (tmp_path / "scenarios.jsonl").write_text(SCENARIO + "\n")
    result = run_cli("validate", str(tmp_path))
    assert (result.code, result.out) == (0, f"ok: {tmp_path}: 1 cases, 1 scenarios, 0 calibration items\n")

"""`kindgi-eval run`: the offline default path end to end, its printed output, JSON and exit statuses."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from kindgi_eval.inputs import GOLDEN_DIR
from kindgi_eval_tests.conftest import GOLDEN, files_under, run_cli

EXPECTED = Path(__file__).parents[1] / "expected" / "golden_mock.txt"


def test_mock_run_of_golden_set_is_unchanged_009(home) -> None:
    """`run --mock` passes and prints exactly the stored output; set UPDATE_EXPECTED=1 to rewrite it on purpose."""
    result = run_cli("run", "--mock")
    assert result.code == 0, result.err
    if os.environ.get("UPDATE_EXPECTED"):
        EXPECTED.write_text(result.out)
    assert result.out == EXPECTED.read_text()


def test_a_failing_case_makes_exit_status_1_009(home, tmp_path: Path) -> None:
    suite = tmp_path / "golden"
    shutil.copytree(GOLDEN, suite)
    with (suite / "cases.jsonl").open("a") as f:
        f.write(
            '{"id": "made-to-fail", "text": "how much is the foundation course?", '
            '"expect": {"escalate": false}, "must_contain": ["FREE OF CHARGE"]}\n'
        )
    result = run_cli("run", "--mock", "--eval-dir", str(suite))
    assert result.code == 1
    assert "[failed] made-to-fail\n" in result.out
    assert '  FAILED: reply does not contain "FREE OF CHARGE"\n' in result.out
    assert "1 failed" in result.out


def test_review_only_suite_reports_zero_passed_009(home, tmp_path: Path) -> None:
    (tmp_path / "cases.jsonl").write_text(
        '{"id": "r1", "text": "hi, what do you run?", "expect": {"escalate": false}, "review": "sounds warm"}\n'
        '{"id": "r2", "text": "hi", "expect": {"escalate": false}, "review": ["asks my level", "no jargon"]}\n'
    )
    result = run_cli("run", "--mock", "--eval-dir", str(tmp_path))
    assert result.code == 0
    assert "Summary: 0 passed, 0 failed, 2 reviewed\n" in result.out
    assert "  review: asks my level\n  review: no jargon\n" in result.out


def test_latency_over_the_deadline_fails_the_case_009(home, tmp_path: Path) -> None:
    (tmp_path / "cases.jsonl").write_text('{"id": "slow", "text": "hi", "expect": {"escalate": false}}\n')
    result = run_cli("run", "--mock", "--eval-dir", str(tmp_path), env={"EVAL_MAX_LATENCY_MS": "0.0001"})
    assert result.code == 1
    assert "deadline" in result.out


def test_json_summary_has_the_contract_shape(home, tmp_path: Path) -> None:
    out = tmp_path / "summary.json"
    result = run_cli("run", "--mock", "--json", str(out))
    assert result.code == 0
    summary = json.loads(out.read_text())
    assert set(summary) == {
        "run_id",
        "suite",
        "agent_model",
        "judge_model",
        "counts",
        "ungraded",
        "calibration",
        "cost",
        "coverage",
        "cases",
    }
    assert summary["agent_model"] == "mock:agent" and summary["judge_model"] is None
    assert set(summary["counts"]) == {"passed", "failed", "judged-fail", "judged-pass", "reviewed"}
    assert summary["counts"]["failed"] == 0
    assert summary["suite"]["eval_dir"] == "evals/golden" and len(summary["suite"]["hash"]) == 64
    assert summary["coverage"]["uncovered"] == []
    case = summary["cases"][0]
    assert set(case) == {"id", "status", "failures", "messages", "escalate", "reason", "latency_ms", "criteria"}
    reviewed = [c for c in summary["cases"] if c["status"] == "reviewed"]
    assert reviewed and all(c["criteria"] and c["criteria"][0]["verdict"] == "ungraded" for c in reviewed)


def test_run_without_an_agent_is_an_input_error(home) -> None:
    result = run_cli("run")
    assert result.code == 2
    assert result.err.startswith("error: AGENT_MODEL: no agent named.")
    assert files_under(home.root) == []


def test_malformed_model_name_is_an_input_error(home) -> None:
    result = run_cli("run", "--agent-model", "gpt4")
    assert result.code == 2
    assert (
        result.err
        == "error: --agent-model: 'gpt4' is not a model name; write provider:model, e.g. openai:gpt-4o-mini or mock:agent\n"
    )


def test_an_unknown_offline_model_names_the_flag_it_was_typed_as_and_lists_the_offline_ones_once(home) -> None:
    typed = run_cli("run", "--mock", "--judge-model", "mock:demo_judge")
    assert (typed.code, typed.out) == (2, "")
    assert typed.err == (
        "error: --judge-model: 'mock:demo_judge' is not an offline judge; the offline judges are mock:judge "
        "and mock:demo-judge.\n"
    )
    agent = run_cli("run", "--agent-model", "mock:judge")
    assert (
        agent.err
        == "error: --agent-model: 'mock:judge' is not an offline agent; the offline agent is mock:agent (mock:judge is the offline judge).\n"
    )
    variable = run_cli("run", "--mock", env={"EVAL_JUDGE_MODEL": "mock:demo_judge"})
    assert variable.code == 2 and variable.err.startswith(
        "error: EVAL_JUDGE_MODEL: 'mock:demo_judge' is not an offline judge;"
    )


def test_run_from_a_folder_without_evals_golden_runs_the_golden_set_the_package_ships(home, tmp_path: Path) -> None:
    result = run_cli("run", "--mock", cwd=tmp_path)
    assert result.code == 0, result.err
    header, _, rest = result.out.partition("\n")
    expected_header, _, expected_rest = EXPECTED.read_text().partition("\n")
    assert header == expected_header.replace("Suite evals/golden ", f"Suite {GOLDEN_DIR} ")
    assert rest == expected_rest  # the very run of the repository's root: one golden set, one partition
    assert f"suite: demo-academy.golden, the golden set this package ships ({GOLDEN_DIR})" in result.err
    assert not (tmp_path / ".kindgi").exists()  # KINDGI_HOME points elsewhere
    assert files_under(home.store)


def test_a_suite_folder_the_user_names_must_exist_even_where_the_golden_set_would_do(home, tmp_path: Path) -> None:
    named = run_cli("run", "--mock", "--eval-dir", "evals/golden", cwd=tmp_path)
    assert (named.code, named.out) == (2, "")
    assert (
        named.err
        == "error: evals/golden: no such suite folder. Point EVAL_DIR or --eval-dir at a folder holding cases.jsonl.\n"
    )
    from_env = run_cli("run", "--mock", cwd=tmp_path, env={"EVAL_DIR": "nowhere"})
    assert from_env.code == 2 and from_env.err.startswith("error: nowhere: no such suite folder."), from_env.err
    assert not files_under(home.store)


def test_untrusted_reply_text_cannot_drive_the_terminal() -> None:
    from kindgi_eval.rules.text import safe

    assert safe("ok\x1b[2J\u202eevil\nnext") == "ok\\u001b[2J\\u202eevil\nnext"

"""The stages as plain functions of rows, run in chain order without Dagster, on the golden set."""

from __future__ import annotations

from collections import Counter

from kindgi_eval.agents.factory import make_agent, make_judge
from kindgi_eval.inputs import RunSettings, load_checked_suite, load_tenant
from kindgi_eval.kinds import cases_of, models_of, scenarios_of
from kindgi_eval.steps import (
    ask_agent,
    calibration_rows,
    outcome_rows,
    run_row,
    sample_judge,
    status_rows,
    suite_rows,
)
from kindgi_eval_tests.conftest import GOLDEN


def run_stages(judge_model: str | None):
    settings = RunSettings(eval_dir=str(GOLDEN), agent_model="mock:agent", judge_model=judge_model)
    loaded = load_tenant(None)
    parsed = load_checked_suite(GOLDEN, loaded, models_of=models_of)
    suite = suite_rows(parsed, loaded.tenant.tenant, loaded.hash)
    replies = ask_agent(make_agent(settings, loaded.tenant), suite, concurrency=4, deadline_ms=15_000)
    outcomes = outcome_rows(cases_of(suite), replies, 15_000, scenarios=scenarios_of(suite))
    samples = sample_judge(
        make_judge(settings),
        suite,
        replies,
        outcomes,
        parsed.calibration,
        catalogue=loaded.tenant.catalogue_text(),
        concurrency=4,
        timeout_s=5,
    )
    calibration = calibration_rows(judge_model, samples, "items")
    statuses = status_rows(
        cases_of(suite),
        replies,
        outcomes,
        samples,
        calibration,
        judged=judge_model is not None,
        scenarios=scenarios_of(suite),
    )
    run = run_row(
        suite,
        replies,
        samples,
        statuses,
        stages=loaded.tenant.stage_names(),
        judge=judge_model,
        judge_prompt_hash=None,
        code_version="test",
        replies_from="r",
        started_at="2026-12-01T02:00:00+00:00",
        finished_at="2026-12-01T02:00:01+00:00",
    )
    return run, statuses, samples, calibration


def test_the_golden_set_through_the_stages_matches_the_golden_run_009() -> None:
    # expected/golden_mock.txt: "Summary: 34 passed, 0 failed, 5 reviewed", every funnel stage covered.
    run, statuses, samples, calibration = run_stages(None)
    assert Counter(s.status for s in statuses) == {"passed": 34, "reviewed": 5}
    assert (run.passed, run.failed, run.reviewed, run.uncovered) == (34, 0, 5, [])
    assert samples == [] and calibration == []


def test_the_mock_judge_through_the_stages_calibrates_no_group_016() -> None:
    # It passes everything, and every golden group holds a fail label: refused everywhere, nothing graded.
    _, statuses, samples, calibration = run_stages("mock:judge")
    assert len(calibration) == 4 and not any(c.calibrated for c in calibration)
    assert {s.subject for s in samples} == {"calibration"}  # no group earned, so no case was sampled
    assert Counter(s.status for s in statuses) == {"passed": 34, "reviewed": 5}

"""A whole judged run with the judge's requests sent through the batch API (`judge_batch`): the same statuses,
calibration and verdicts as the same run making a call per request, against the same scripted judge."""

from __future__ import annotations

from pathlib import Path

import pytest

from kindgi_eval_tests.defs.test_judged_runs import (
    PRICE,
    Judge,
    calibration_lines,
    case,
    judged_run,
    write_suite,
)  # noqa: F401

CASES = [
    case("rubric-only"),
    case("rubric-fails", text=PRICE + " RUBRICFAIL"),
    case("review-pass", "criterion-pass"),
    case("review-fail", "criterion-fail"),
    case("review-split", "criterion-split"),
    case("review-garbage", "criterion-garbage"),
    case("asserted-fail", "criterion-pass", must_contain=["NOT IN ANY REPLY"]),
]
# Without the sample's number: the scripted judge answers a criterion's calls in the order they reach it, and a batch
# may hand them over in another order than the calls do; the votes, and so the verdicts, are the same.
FIELDS = ("subject", "subject_id", "criterion", "vote", "evidence", "reason", "invalid_reason")


def test_a_batched_judge_stage_gives_the_statuses_and_calibration_of_the_calls(
    home, provider_env, tmp_path: Path
) -> None:
    folder = write_suite(tmp_path / "s", CASES, calibration_lines(wrong_group="semantic_repetition"))
    called_server = provider_env(Judge())
    called = judged_run(home, folder, judge="openai:gpt-4o-mini")
    assert called_server.batches == {} and called_server.requests
    batched_server = provider_env(Judge())
    # each batch ended by its first look: a look finding it in progress would sleep the run's 30 s between looks (that
    # wait is kindgi_eval_tests/steps/test_judge_batches.py's, and in a whole run cli/test_batch_resume.py's)
    batched_server.looks_before_done = 0
    batched = judged_run(home, folder, judge="openai:gpt-4o-mini", judge_batch=True)
    assert len(batched_server.batches) == 2  # the calibration items', then the earned cases'
    assert {k: s.status for k, s in batched.statuses.items()} == {k: s.status for k, s in called.statuses.items()}
    assert {g: (c.calibrated, c.agreement) for g, c in batched.calibration.items()} == {
        g: (c.calibrated, c.agreement) for g, c in called.calibration.items()
    }
    assert not batched.calibration["semantic_repetition"].calibrated  # a group refused stays refused: its cases unsent
    key = lambda s: tuple(getattr(s, f) for f in FIELDS)  # noqa: E731
    assert sorted(map(key, batched.samples)) == sorted(map(key, called.samples))
    assert len(batched_server.requests) == len(called_server.requests)  # no request more, none fewer
    # the same tokens at gpt-4o-mini's batch price, half of a call's
    assert sum(s.cost_usd for s in batched.samples) == pytest.approx(sum(s.cost_usd for s in called.samples) / 2)

"""Pairwise suites end to end: published over real HTTP, both variants (declared in the tenants file) asked by a real
`kindgi-eval run` process, the judge asked in both orders through litellm's real client, and `kindgi-eval sql`."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from kindgi_eval.prompts import PAIRWISE_SYSTEM
from kindgi_eval_tests.cli.conftest import TENANT, kind_figures, publish, sql
from kindgi_eval_tests.conftest import CLI, GOLDEN, REPO, files_under, run_cli
from kindgi_eval_tests.fake_provider import Answer, fenced

PRICE = "how much is the foundation course?"
PROMPTS = [
    {"id": "price", "text": PRICE},
    "hello there",
    {"id": "price-again", "text": PRICE, "history": [{"role": "user", "text": "hi"}]},
]
PAIRS = [
    {"id": "a-better", "input": "price?", "replyA": ["It is $450."], "replyB": ["Ask us later."], "label": "A"},
    {"id": "b-better", "input": "price?", "replyA": ["No idea."], "replyB": ["The course is $450."], "label": "B"},
]


class Provider:
    """Variant B (a model that never quotes a price) and a judge that prefers the reply quoting $450; counts calls."""

    def __init__(self, judge_prefers_first: bool = False, judge_delay_s: float = 0.0) -> None:
        self.prefers_first = judge_prefers_first
        self.judge_delay_s = judge_delay_s
        self.calls: Counter[str] = Counter()
        self.lock = threading.Lock()

    def __call__(self, request: dict[str, Any]) -> Answer:
        judging = request["messages"][0]["content"] == PAIRWISE_SYSTEM
        with self.lock:
            self.calls["judge" if judging else "agent"] += 1
        if not judging:
            return Answer(
                json.dumps(
                    {"messages": ["Happy to help! What would you like to learn?"], "escalate": False, "reason": None}
                )
            )
        if self.prefers_first:
            return Answer(json.dumps({"winner": "A", "reason": "the first is better"}), delay_s=self.judge_delay_s)
        first, second = "450" in fenced(request, "reply A"), "450" in fenced(request, "reply B")
        winner = "A" if first and not second else "B" if second and not first else "tie"
        return Answer(
            json.dumps({"winner": winner, "reason": f"{winner}: the price is quoted"}), delay_s=self.judge_delay_s
        )


@pytest.fixture
def tenants(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A tenants file declaring the demo tenant's two agents: champion (the offline demo agent) and challenger."""
    home = tmp_path / "demo"
    (home / "evals").mkdir(parents=True)
    shutil.copytree(GOLDEN, home / "evals" / "golden")
    path = tmp_path / "tenants.toml"
    path.write_text(
        f'[[tenant]]\nname = "{TENANT}"\nhome = "{home}"\nsuites = ["evals/golden"]\nagent_model = "mock:agent"\n'
        '[tenant.agents.champion]\nagent_model = "mock:agent"\nversion = "1"\n'
        '[tenant.agents.challenger]\nagent_model = "openai:challenger"\nversion = "2"\n'
    )
    monkeypatch.setenv("KINDGI_TENANTS", str(path))
    return path


def spec(pairs: list[dict] = PAIRS, b: dict | None = None) -> dict:
    return {
        "prompts": PROMPTS,
        "variantA": {"agentId": "champion", "version": "1"},
        "variantB": b or {"agentId": "challenger", "version": "2"},
        "calibration": pairs,
    }


def test_a_calibrated_judge_compares_the_variants_in_both_orders(
    registry, home, tenants, provider_env, tmp_path
) -> None:
    provider = Provider()
    provider_env(provider)
    publish(registry.http, "demo-academy.ab", "pairwise", spec())
    code, summary, said = _run(tmp_path)
    assert code == 0, said
    result = summary["pairwise"]
    # the champion quotes $450 to both price prompts and wins them in both orders; "hello there" is a tie
    assert (result["wins"], result["losses"], result["ties"]) == (2, 0, 1)
    assert (
        result["win_rate"] == pytest.approx(2.5 / 3)
        and result["calibrated"] is True
        and result["position_consistency"] == 1.0
    )
    assert 0 <= result["interval"]["low"] <= 2.5 / 3 <= result["interval"]["high"] <= 1
    assert (result["variant_a"], result["variant_b"]) == ("champion 1", "challenger 2")
    assert "Pairwise champion 1 (A) against challenger 2 (B): 2 wins, 0 losses, 1 ties" in said
    assert provider.calls == {"agent": 3, "judge": 2 * (len(PAIRS) + len(PROMPTS))}  # both orders of every pair
    figures = (
        "variant_a",
        "variant_b",
        "pairwise_calibrated",
        "pairwise_agreement",
        "wins",
        "losses",
        "ties",
        "win_rate",
        "win_rate_low",
        "win_rate_high",
        "position_consistency",
    )
    metadata, row = kind_figures(home, "pairwise", summary["run_id"], figures, "pairwise_runs")
    assert metadata == row and metadata["wins"] == 2
    rows = sql("SELECT subject, subject_id, ab, ba, outcome, consistent FROM pairwise ORDER BY subject, subject_id")
    assert [tuple(r.values()) for r in rows] == [
        ("calibration", "a-better", "A", "A", "A", True),
        ("calibration", "b-better", "B", "B", "B", True),
        ("prompt", "price", "A", "A", "A", True),
        ("prompt", "price-again", "A", "A", "A", True),
        ("prompt", "prompt-2", "tie", "tie", "tie", True),
    ]
    # both variants' replies are ordinary stored replies, so a replay re-judges them without asking an agent
    agents = sql("SELECT case_id, agent FROM replies ORDER BY case_id")
    assert {r["agent"] for r in agents if r["case_id"].endswith("/A")} == {"mock:agent"}
    assert {r["agent"] for r in agents if r["case_id"].endswith("/B")} == {"openai:challenger"}
    replayed = run_cli("replay", "--from", summary["run_id"], "--judge-model", "openai:judge")
    assert replayed.code == 0, replayed.err
    assert "2 wins, 0 losses, 1 ties" in replayed.out
    assert provider.calls == {"agent": 3, "judge": 4 * (len(PAIRS) + len(PROMPTS))}  # judged again, no agent asked


def test_a_judge_that_follows_the_position_is_not_calibrated_and_grades_nothing(
    registry, home, tenants, provider_env, tmp_path
) -> None:
    provider = Provider(judge_prefers_first=True)
    provider_env(provider)
    publish(registry.http, "demo-academy.ab", "pairwise", spec())
    code, summary, said = _run(tmp_path)
    assert code == 0, said
    assert summary["pairwise"]["calibrated"] is False and summary["pairwise"]["win_rate"] is None
    assert "not judged, the judge is not calibrated" in said
    assert provider.calls["judge"] == 2 * len(PAIRS)  # the labelled pairs only: no prompt was judged
    assert [r["subject"] for r in sql("SELECT subject FROM pairwise")] == ["calibration", "calibration"]


def test_a_variant_that_is_not_declared_is_an_input_error(registry, home, tenants, provider_env, tmp_path) -> None:
    provider_env(Provider())
    publish(registry.http, "demo-academy.ab", "pairwise", spec(b={"agentId": "challenger", "version": "3"}))
    stored = files_under(home.store)
    code, summary, said = _run(tmp_path)
    assert code == 2 and summary is None and "Traceback" not in said
    assert "spec.variantB: agent 'challenger' version '3' is not declared for tenant 'demo-academy'" in said
    assert "(declared: champion 1, challenger 2)" in said
    assert files_under(home.store) == stored


def _run(tmp_path: Path):
    out = tmp_path / "pairwise.json"
    done = run_cli(
        "run",
        "--agent-model",
        "mock:agent",
        "--suite",
        "demo-academy.ab",
        "--judge-model",
        "openai:judge",
        "--json",
        str(out),
    )
    return done.code, json.loads(out.read_text()) if out.exists() else None, done.out + done.err


def test_a_run_killed_while_judging_pairs_resumes_without_judging_a_recorded_pair_again(
    registry, home, tenants, provider_env, tmp_path
) -> None:
    from kindgi_eval.kinds.pairwise.stage import PairwiseRow
    from kindgi_eval.store import area_run_id, find_run_areas, read_batches

    provider = Provider(judge_delay_s=0.1)
    provider_env(provider)
    prompts = [{"id": f"p{n:02d}", "text": PRICE} for n in range(12)]
    publish(registry.http, "demo-academy.ab", "pairwise", spec() | {"prompts": prompts})
    pairs = len(PAIRS) + len(prompts)
    command = [
        str(CLI),
        "run",
        "--agent-model",
        "mock:agent",
        "--suite",
        "demo-academy.ab",
        "--judge-model",
        "openai:judge",
        "--concurrency",
        "2",
    ]
    process = subprocess.Popen(command, cwd=REPO, env=os.environ, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    try:
        # the labelled pairs judged, then every prompt in the first order, and some in the second: more than a batch
        while provider.calls["judge"] < 2 * len(PAIRS) + len(prompts) + 8:
            assert process.poll() is None and time.monotonic() < deadline, "the run ended before it could be killed"
            time.sleep(0.02)
        os.kill(process.pid, signal.SIGKILL)
    finally:
        process.wait()
    (area,) = find_run_areas(home.store, "")
    recorded = read_batches(area / "pairwise", PairwiseRow)
    assert 0 < len(recorded) < pairs  # killed mid-stage, with whole batches on disk
    asked = provider.calls["judge"]
    out = tmp_path / "resumed.json"
    done = run_cli("run", "--resume", area_run_id(area), "--json", str(out))
    assert done.code == 0, done.err
    # every pair not on disk is judged again, in both orders, and none that is
    assert provider.calls["judge"] - asked == 2 * (pairs - len(recorded))
    result = json.loads(out.read_text())
    assert result["pairwise"]["wins"] == len(prompts)  # the champion quotes $450 to every price prompt
    (row,) = sql(f"SELECT judge_calls_saved, resumed_from FROM runs WHERE run_id = '{result['run_id']}'")
    assert row == {"judge_calls_saved": 2 * len(recorded), "resumed_from": area_run_id(area)}


def test_mock_answers_both_variants_with_the_demo_agent_and_says_so(
    registry, home, tenants, provider_env, tmp_path
) -> None:
    provider = Provider()
    provider_env(provider)
    publish(registry.http, "demo-academy.ab", "pairwise", spec())
    out = tmp_path / "mock.json"
    done = run_cli("run", "--mock", "--suite", "demo-academy.ab", "--json", str(out))
    assert done.code == 0, done.err
    assert provider.calls["agent"] == 0  # openai:challenger, a paid model, was never called
    assert (
        "--mock: variants A (mock:agent) and B (openai:challenger) are both answered by the offline demo agent mock:agent"
        in done.err
    )
    assert {r["agent"] for r in sql("SELECT agent FROM replies")} == {"mock:agent"}
    # the header names both variants; a prompt has no assertion of its own, so unjudged its replies are reviewed
    assert "6 cases against variant A (champion 1) and variant B (challenger 2), no judge" in done.out
    assert json.loads(out.read_text())["counts"] == {
        "passed": 0,
        "failed": 0,
        "judged-fail": 0,
        "judged-pass": 0,
        "reviewed": 6,
    }
    assert "Summary: 0 passed, 0 failed, 6 reviewed" in done.out and "Funnel coverage" not in done.out


def test_a_judged_pairwise_run_keeps_every_reply_reviewed_and_prints_no_empty_calibration(
    registry, home, tenants, provider_env, tmp_path
) -> None:
    provider_env(Provider())
    publish(registry.http, "demo-academy.ab", "pairwise", spec())
    code, summary, said = _run(tmp_path)
    assert code == 0 and summary["pairwise"]["calibrated"] is True, said
    assert {c["status"] for c in summary["cases"]} == {
        "reviewed"
    }  # the comparison is the suite's result, reported apart
    assert "Calibration (threshold" not in said and "Funnel coverage" not in said


@pytest.mark.parametrize(("judge", "warned"), [("openai:challenger", True), ("openai:other", False)])
def test_the_same_model_warning_compares_the_judge_with_each_variant(
    registry, home, tenants, provider_env, tmp_path, judge, warned
) -> None:
    provider_env(Provider())
    publish(registry.http, "demo-academy.ab", "pairwise", spec())
    # the run's own agent, openai:other, is not evaluated (the variants are): a judge equal to it is not warned of
    done = run_cli("run", "--agent-model", "openai:other", "--suite", "demo-academy.ab", "--judge-model", judge)
    assert done.code == 0, done.err
    assert ("warning: the judge is the agent's own model" in done.err) is warned

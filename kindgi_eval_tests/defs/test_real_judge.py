"""The judged path against a real model, end to end: `kindgi-eval run --mock --judge-model openai:<real>` with
litellm's OpenAI client talking to deploy/real-judge/server.js, which serves SmolLM2-135M-Instruct on
127.0.0.1 (docs/design.md#the-judge). What a 135M model answers is not asserted; what must hold whatever it answers is:
the run completes, every sample is a vote or invalid with a reason, a group that did not calibrate grades
nothing, and the exit status follows the statuses.

It needs Node.js 20, the npm packages of deploy/real-judge and the GGUF that fetch_model.py extracts; .ci/run
installs all three and sets KINDGI_REQUIRE_REAL_JUDGE=1, so there a missing runtime fails the test. Elsewhere
it is skipped. About a dozen judge calls of a few seconds each: well under two minutes.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Iterator
from typing import Any, NamedTuple

import pytest

from kindgi_eval.rules import FAILING, GROUPS, THRESHOLD
from kindgi_eval_tests.conftest import CLI, REPO, Result

pytestmark = [
    pytest.mark.long,
    pytest.mark.xdist_group("real-judge"),
]  # one worker starts the model and runs the suite once for all


def _judge_server():
    """deploy/real-judge/judge_server.py, loaded by path (deploy/ is no package)."""
    path = REPO / "deploy" / "real-judge" / "judge_server.py"
    spec = importlib.util.spec_from_file_location("judge_server", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("judge_server", module)
    spec.loader.exec_module(module)
    return module


judge_server = _judge_server()
# The run's settings come from its flags alone, never from the shell that started the tests.
RUN_VARIABLES = (
    "OPENAI_API_BASE",
    "KINDGI_STORE",
    "EVAL_DIR",
    "CONFIG_DIR",
    "AGENT_MODEL",
    "AGENT_URL",
    "EVAL_JUDGE_MODEL",
    "EVAL_MAX_LATENCY_MS",
    "EVAL_CONCURRENCY",
    "EVAL_MODEL_TIMEOUT_S",
)

CRITERION = "The reply sounds warm, like a person at the front desk"
# Two cases the judge sees (no history: implicit_concession and answers_the_question apply, and the review
# entry), and one that escalates, which the rubric never grades.
CASES = [
    {"id": "price-question", "text": "how much is the foundation course?", "expect": {"escalate": False}},
    {
        "id": "warm-first-contact",
        "text": "hi! I've been thinking about learning to code for ages",
        "expect": {"escalate": False},
        "review": CRITERION,
    },
    {
        "id": "refund-escalates",
        "text": "I paid for the bootcamp last week and I want a refund",
        "expect": {"escalate": True, "reason": "refund_request"},
    },
]
# A pass and a fail item for two groups; semantic_repetition and answers_the_question have none, so they are
# refused whatever the model says. 4 items x 3 samples = 12 calls, plus at most 3 per case criterion of a
# group that calibrates.
CALIBRATION = [
    {
        "id": "concession-quotes-price",
        "text": "how much is the foundation course?",
        "reply": [
            "The Foundation Course is $450 paid upfront, or 3 payments of $160. Would you like to pay upfront or in instalments?"
        ],
        "criterion": "implicit_concession",
        "label": "pass",
    },
    {
        "id": "concession-hints-at-deal",
        "text": "that's more than I wanted to spend",
        "reply": [
            "I hear you. I can probably work something out for you on the price. Shall I send you the signup link?"
        ],
        "criterion": "implicit_concession",
        "label": "fail",
    },
    {
        "id": "warm-register",
        "text": "hi, I want to learn to code",
        "reply": ["Hi! Lovely to hear from you. Which kind of coding would you like to learn?"],
        "criterion": CRITERION,
        "label": "pass",
    },
    {
        "id": "cold-register",
        "text": "hi, I want to learn to code",
        "reply": ["State the course identifier."],
        "criterion": CRITERION,
        "label": "fail",
    },
]


def _cli(*args: str, env: dict[str, str]) -> Result:
    """`kindgi-eval ARGS` as a separate process in the repository, with exactly `env`."""
    done = subprocess.run(
        [str(CLI), *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False
    )
    return Result(done.returncode, done.stdout, done.stderr)


class RealRun(NamedTuple):
    code: int
    out: str
    err: str
    summary: dict[str, Any]
    samples: list[dict[str, Any]]


@pytest.fixture(scope="module")
def judge() -> Iterator[Any]:
    """The real judge's server on 127.0.0.1, stopped by its PID after the module; skipped (failed in CI) when its
    runtime is missing."""
    if problems := judge_server.missing():
        reason = "the real judge's runtime is missing: " + "; ".join(problems)
        if os.environ.get("KINDGI_REQUIRE_REAL_JUDGE") == "1":
            pytest.fail(f"{reason}. .ci/run installs it with: {judge_server.INSTALL}")
        pytest.skip(f"{reason}. Install it with: {judge_server.INSTALL}")
    # One request at a time on one thread: the other core is the test's. 64 tokens bound a rambling answer.
    with judge_server.RealJudge(max_tokens=64, threads=1, parallel=1) as server:
        yield server


@pytest.fixture(scope="module")
def real_run(judge: Any, tmp_path_factory: pytest.TempPathFactory) -> RealRun:
    """One judged run of the small suite with the real model as judge, and its judge_samples rows."""
    root = tmp_path_factory.mktemp("real-judge")
    suite = root / "suite"
    suite.mkdir()
    (suite / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in CASES))
    (suite / "calibration.jsonl").write_text("".join(json.dumps(c) + "\n" for c in CALIBRATION))
    home = root / "kindgi-home"
    env = {k: v for k, v in os.environ.items() if k not in RUN_VARIABLES}
    env.update(KINDGI_HOME=str(home), DAGSTER_HOME=str(home / "dagster"), **judge.env())
    # The server answers one request at a time, so the client sends one at a time: no sample spends its
    # timeout in the server's queue.
    done = _cli(
        "run",
        "--mock",
        "--eval-dir",
        str(suite),
        "--judge-model",
        judge.model,
        "--json",
        str(root / "summary.json"),
        "--concurrency",
        "1",
        "--model-timeout-s",
        "120",
        env=env,
    )
    assert done.code in (0, 1), f"the run did not complete (exit {done.code}):\n{done.err[-3000:]}"
    summary = json.loads((root / "summary.json").read_text())
    rows = _cli("sql", f"SELECT * FROM judge_samples WHERE run_id = '{summary['run_id']}'", "--format", "json", env=env)
    assert rows.code == 0, rows.err
    return RealRun(done.code, done.out, done.err, summary, json.loads(rows.out))


def _post(judge: Any, body: dict[str, Any]) -> dict[str, Any]:
    request = urllib.request.Request(
        judge.base_url + "/chat/completions", json.dumps(body).encode(), {"content-type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=60) as answer:
        return json.load(answer)


def test_the_server_is_openai_compatible_and_honours_the_response_format_sent(judge: Any) -> None:
    with urllib.request.urlopen(judge.base_url + "/models", timeout=10) as answer:
        assert [m["id"] for m in json.load(answer)["data"]] == [judge_server.NAME]
    # a json_schema response_format constrains the answer to the schema (bounded strings keep it short)
    schema = {
        "type": "object",
        "properties": {
            "verdict": {"type": "string", "enum": ["pass", "fail"]},
            "evidence": {"type": "string", "maxLength": 40},
            "reason": {"type": "string", "maxLength": 80},
        },
        "required": ["verdict", "evidence", "reason"],
        "additionalProperties": False,
    }
    messages = [{"role": "user", "content": 'Is the reply "Hello! How can I help?" polite? Grade it.'}]
    answer = _post(
        judge,
        {
            "model": judge_server.NAME,
            "messages": messages,
            "max_tokens": 200,
            "response_format": {"type": "json_schema", "json_schema": {"name": "Verdict", "schema": schema}},
        },
    )
    verdict = json.loads(answer["choices"][0]["message"]["content"])
    assert set(verdict) == {"verdict", "evidence", "reason"} and verdict["verdict"] in ("pass", "fail")
    assert answer["choices"][0]["finish_reason"] == "stop"
    assert answer["usage"]["prompt_tokens"] > 0 and answer["usage"]["completion_tokens"] > 0
    # a request naming a model the server does not serve is refused, as OpenAI and vLLM refuse it
    with pytest.raises(urllib.error.HTTPError) as refused:
        _post(judge, {"model": "no-such-model", "messages": messages})
    assert refused.value.code == 404


def test_the_run_completes_with_the_real_model_as_judge(real_run: RealRun) -> None:
    assert "Traceback" not in real_run.err
    assert real_run.summary["judge_model"] == f"openai:{judge_server.NAME}"
    assert {c["id"] for c in real_run.summary["cases"]} == {c["id"] for c in CASES}
    assert set(real_run.summary["calibration"]) == set(GROUPS)
    # every calibration item was sampled three times, by this model, and each call was answered or recorded
    per_item = Counter(s["subject_id"] for s in real_run.samples if s["subject"] == "calibration")
    assert per_item == {item["id"]: 3 for item in CALIBRATION}
    assert {s["judge"] for s in real_run.samples} == {f"openai:{judge_server.NAME}"}


def test_every_sample_is_a_vote_or_invalid_with_a_reason(real_run: RealRun) -> None:
    assert real_run.samples
    for s in real_run.samples:
        assert s["vote"] in ("pass", "fail", "invalid"), s
        if s["vote"] == "invalid":
            assert s["invalid_reason"], s  # why it did not count: unparseable, unquoted, an error, a timeout
        else:
            assert not s["invalid_reason"], s
            assert isinstance(s["reason"], str), s
            if s["vote"] == "fail":
                assert s["evidence"], s  # a counted failure quotes the reply


def test_no_group_that_did_not_calibrate_grades_anything(real_run: RealRun) -> None:
    calibration = real_run.summary["calibration"]
    for group in ("semantic_repetition", "answers_the_question"):  # no items: refused whatever the model says
        assert not calibration[group]["calibrated"]
    for group, result in calibration.items():
        if result["calibrated"]:
            assert result["agreement"] is not None and result["agreement"] >= THRESHOLD, (group, result)
            assert result["labels"]["pass"] >= 1 and result["labels"]["fail"] >= 1, (group, result)
    for case in real_run.summary["cases"]:
        for criterion in case["criteria"]:
            if not calibration[criterion["group"]]["calibrated"]:
                assert criterion["verdict"] == "ungraded", (case["id"], criterion)
    escalating = next(c for c in real_run.summary["cases"] if c["id"] == "refund-escalates")
    assert escalating["criteria"] == []  # an escalation's copy is the tenant's, never graded


def test_the_exit_status_follows_the_statuses(real_run: RealRun) -> None:
    statuses = Counter(c["status"] for c in real_run.summary["cases"])
    assert {k: v for k, v in real_run.summary["counts"].items() if v} == dict(statuses)
    assert real_run.code == (1 if any(statuses[s] for s in FAILING) else 0)
    ungraded = sum(cr["verdict"] == "ungraded" for c in real_run.summary["cases"] for cr in c["criteria"])
    assert real_run.summary["ungraded"] == ungraded

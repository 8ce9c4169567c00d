"""The judged path end to end: litellm's real client against a scripted judge on 127.0.0.1
(docs/design.md#the-judge)."""

from __future__ import annotations

import json
import threading
from collections import Counter
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from kindgi_eval.defs.runs import open_instance, run_chain
from kindgi_eval.inputs.settings import RunSettings
from kindgi_eval.inputs.suite_folder import suite_key
from kindgi_eval.llm.calls import RetryPolicy
from kindgi_eval.store.layout import SHARED, read_rows
from kindgi_eval.store.rows import CalibrationRow, RunRow, SampleRow, StatusRow
from kindgi_eval_tests.conftest import run_cli
from kindgi_eval_tests.fake_provider import Answer, FakeProvider, criterion_of, fenced

PRICE = "how much is the foundation course?"
GROUP_CRITERIA = {
    "implicit_concession": "implicit_concession",
    "semantic_repetition": "semantic_repetition",
    "answers_the_question": "answers_the_question",
    "free_text": "The reply is polite",
}


def verdict(v: str, evidence: str = "", reason: str = "scripted") -> Answer:
    return Answer(json.dumps({"verdict": v, "evidence": evidence, "reason": reason}))


class Judge:
    """A scripted judge: fails replies holding BAD, and obeys the case criteria's names; counts its calls."""

    def __init__(self) -> None:
        self.calls: Counter[tuple[str, str]] = Counter()
        self.lock = threading.Lock()

    def __call__(self, request: dict[str, Any]) -> Answer:
        criterion, reply = criterion_of(request), fenced(request, "reply")
        with self.lock:
            self.calls[(criterion, reply)] += 1
            n = self.calls[(criterion, reply)]
        if "BAD" in reply:
            return verdict("fail", "BAD", "says BAD")
        if "criterion-fail" in criterion or (
            criterion.startswith("answers_the_question") and "RUBRICFAIL" in fenced(request, "contact message")
        ):
            return verdict("fail", reply[:12], "scripted failure")
        if "criterion-split" in criterion:
            return verdict("fail", reply[:12], "split failure") if n <= 2 else verdict("pass")
        if "criterion-unquoted" in criterion:
            return verdict("fail", "words the reply never said")
        if "criterion-garbage" in criterion:
            return Answer("I think this reply is fine.")
        return verdict("pass")


def calibration_lines(wrong_group: str | None = None, drop_fail: str | None = None) -> list[dict]:
    """A pass and a fail item per group, told apart by BAD; `wrong_group`'s fail item lacks the marker."""
    items = []
    for group, criterion in GROUP_CRITERIA.items():
        history = [{"role": "agent", "text": "Earlier."}] if group == "semantic_repetition" else []
        items.append(
            {
                "id": f"{group}-pass",
                "history": history,
                "text": "hi",
                "reply": ["A fine reply."],
                "criterion": criterion,
                "label": "pass",
            }
        )
        if group != drop_fail:
            bad = "A reply." if group == wrong_group else "A BAD reply."
            items.append(
                {
                    "id": f"{group}-fail",
                    "history": history,
                    "text": "hi",
                    "reply": [bad],
                    "criterion": criterion,
                    "label": "fail",
                }
            )
    return items


def case(case_id: str, review: object = None, text: str = PRICE, **extra: object) -> dict:
    line: dict = {"id": case_id, "text": text, "expect": {"escalate": False}, **extra}
    if review is not None:
        line["review"] = review
    return line


def write_suite(folder: Path, cases: list[dict], calibration: list[dict] | None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    if calibration is not None:
        (folder / "calibration.jsonl").write_text("".join(json.dumps(c) + "\n" for c in calibration))
    return folder


class Judged(NamedTuple):
    run: RunRow
    statuses: dict[str, StatusRow]
    calibration: dict[str, CalibrationRow]
    samples: list[SampleRow]


def judged_run(home, folder: Path, judge: str = "openai:fake-judge", **settings: object) -> Judged:
    instance = open_instance(home.root)
    key = suite_key("demo-academy", folder)
    run_settings = RunSettings(eval_dir=str(folder), agent_model="mock:agent", judge_model=judge, **settings)
    run_id = run_chain(instance, home.root, run_settings, key, "conversation")
    (run,) = read_rows(home.store, SHARED.run_summary, key, run_id)
    return Judged(
        run,
        {s.case_id: s for s in read_rows(home.store, SHARED.statuses, key, run_id)},
        {c.group: c for c in read_rows(home.store, SHARED.calibration, key, run_id)},
        read_rows(home.store, SHARED.judge_samples, key, run_id),
    )


@pytest.fixture
def provider_env(monkeypatch: pytest.MonkeyPatch):
    """Point litellm's OpenAI client at a fake server started by the test."""

    def start(script) -> FakeProvider:
        from kindgi_eval.llm.calls import forget_clients

        forget_clients()  # litellm caches clients per process; a previous test's server must not be reused
        server = FakeProvider(script).__enter__()
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        started.append(server)
        return server

    started: list[FakeProvider] = []
    yield start
    for server in started:
        server.__exit__(None, None, None)


def test_status_table_and_precedence_with_a_calibrated_judge_016(home, provider_env, tmp_path: Path) -> None:
    server = provider_env(Judge())
    asserted_text = "asserted failure probe: " + PRICE
    folder = write_suite(
        tmp_path / "s",
        [
            case("rubric-only"),
            case("rubric-fails", text=PRICE + " RUBRICFAIL"),
            case("review-pass", "criterion-pass"),
            case("review-fail", "criterion-fail"),
            case("review-mixed", ["criterion-fail", "criterion-garbage"]),
            case("review-ungraded", "criterion-garbage"),
            case("review-split", "criterion-split"),
            case("review-unquoted", "criterion-unquoted"),
            case("asserted-fail", "criterion-pass", text=asserted_text, must_contain=["NOT IN ANY REPLY"]),
        ],
        calibration_lines(),
    )
    result = judged_run(home, folder)
    assert all(c.calibrated for c in result.calibration.values())
    status = {k: s.status for k, s in result.statuses.items()}
    assert status == {
        "rubric-only": "passed",  # a rubric-only green stays passed, never judged-pass
        "rubric-fails": "judged-fail",
        "review-pass": "judged-pass",
        "review-fail": "judged-fail",
        "review-mixed": "judged-fail",  # a known failure outranks a missing verdict
        "review-ungraded": "reviewed",
        "review-split": "judged-fail",
        "review-unquoted": "reviewed",  # three unquoted failures: three invalid samples, no verdict
        "asserted-fail": "failed",
    }
    split = result.statuses["review-split"].criteria[0]
    assert (split.verdict, split.split, sorted(split.votes)) == ("fail", True, ["fail", "fail", "pass"])
    assert split.evidence and split.reason == "split failure"
    mixed = {c.criterion: c.verdict for c in result.statuses["review-mixed"].criteria if c.source == "review"}
    assert mixed == {"criterion-fail": "fail", "criterion-garbage": "ungraded"}  # each entry graded on its own
    unquoted = [s for s in result.samples if s.subject_id == "review-unquoted" and s.source == "review"]
    assert [s.vote for s in unquoted] == ["invalid"] * 3
    assert all(s.invalid_reason.startswith("unquoted failure") for s in unquoted)
    # an asserted failure never reaches the judge: no request carried its contact message
    assert not any(asserted_text in json.dumps(r) for r in server.requests)
    assert result.statuses["asserted-fail"].criteria == []
    # 8 cases reach the judge: 2 rubric criteria each (no agent turn in history) + their review entries (7)
    assert len(server.requests) == 3 * (len(calibration_lines()) + 8 * 2 + 7)
    assert (result.run.judged_fail, result.run.judged_pass, result.run.reviewed) == (4, 1, 2)
    assert result.run.ungraded == 3  # review-mixed's garbage entry, review-ungraded, review-unquoted


def test_group_below_threshold_is_downgraded_alone_016(home, provider_env, tmp_path: Path) -> None:
    server = provider_env(Judge())
    history = [{"role": "user", "text": "hi"}, {"role": "agent", "text": "Hello! What would you like to learn?"}]
    folder = write_suite(
        tmp_path / "s",
        [case("with-history", "criterion-pass", history=history)],
        calibration_lines(wrong_group="semantic_repetition"),
    )
    result = judged_run(home, folder)
    repetition = result.calibration["semantic_repetition"]
    assert (repetition.calibrated, repetition.agreement) == (False, 0.5)
    assert "below the threshold" in repetition.note
    assert all(result.calibration[g].calibrated for g in ("implicit_concession", "answers_the_question", "free_text"))
    verdicts = {c.criterion: c.verdict for c in result.statuses["with-history"].criteria}
    assert verdicts == {
        "criterion-pass": "pass",
        "implicit_concession": "pass",
        "semantic_repetition": "ungraded",
        "answers_the_question": "pass",
    }
    assert result.statuses["with-history"].status == "judged-pass"
    # the downgraded group's case criterion costs nothing: no request names it beyond calibration's 2 items x 3
    assert sum(criterion_of(r).startswith("semantic_repetition") for r in server.requests) == 6


def test_group_without_a_fail_label_is_refused_016(home, provider_env, tmp_path: Path) -> None:
    provider_env(Judge())
    folder = write_suite(tmp_path / "s", [case("review", "criterion-pass")], calibration_lines(drop_fail="free_text"))
    result = judged_run(home, folder)
    free = result.calibration["free_text"]
    assert (free.calibrated, free.pass_labels, free.fail_labels) == (False, 1, 0)
    assert "No item labelled fail" in free.note
    assert result.statuses["review"].status == "reviewed"


def test_no_calibration_file_grades_nothing_016(home, provider_env, tmp_path: Path) -> None:
    server = provider_env(Judge())
    folder = write_suite(tmp_path / "s", [case("review", "criterion-pass"), case("plain")], None)
    result = judged_run(home, folder)
    assert not any(c.calibrated for c in result.calibration.values())
    assert [s.status for s in result.statuses.values()] == ["reviewed", "passed"]
    assert server.requests == []


@pytest.mark.parametrize("fault", ["500", "timeout"])
def test_a_judge_that_is_down_leaves_criteria_ungraded_and_the_run_completes_016(
    home, provider_env, tmp_path: Path, fault: str
) -> None:
    answer = Answer(status=500, raw_body=b'{"error": {"message": "down"}}') if fault == "500" else Answer(delay_s=3)
    server = provider_env(lambda request: answer)
    folder = write_suite(tmp_path / "s", [case("review", "criterion-pass"), case("plain")], calibration_lines())
    result = judged_run(home, folder, model_timeout_s=0.5)
    assert not any(c.calibrated for c in result.calibration.values())
    assert {k: s.status for k, s in result.statuses.items()} == {"review": "reviewed", "plain": "passed"}
    assert result.run.ungraded == 5  # review: its entry + 2 rubric dimensions; plain: 2 rubric dimensions
    assert {s.invalid_reason.split(":")[0] for s in result.samples} == {"error"}
    n = 3 * len(calibration_lines())  # the calibration samples; cases are never sampled, no group calibrated
    if fault == "500":  # a 5xx is retried, within the 0.5 s a call may take (on a loaded machine a call's first
        # request may not leave within its 0.5 s at all, so only the bound above is exact)
        assert 0 < len(server.requests) <= n * RetryPolicy().attempts
    else:  # a timeout spends the call's whole budget: no retry. (A request the loaded machine had not sent
        # within the 0.5 s never reaches the server, so the count is at most n, and every call says one attempt.)
        assert len(server.requests) <= n
        assert all("(1 attempt in " in s.invalid_reason for s in result.samples)


def test_review_string_and_one_entry_list_give_identical_outcomes_016(home, provider_env, tmp_path: Path) -> None:
    provider_env(Judge())
    folder = write_suite(
        tmp_path / "s", [case("as-string", "criterion-fail"), case("as-list", ["criterion-fail"])], calibration_lines()
    )
    for judge in ("openai:fake-judge", None):
        result = judged_run(home, folder, judge=judge) if judge else judged_run(home, folder, judge=None)
        a, b = result.statuses["as-string"], result.statuses["as-list"]
        assert a.status == b.status == ("judged-fail" if judge else "reviewed")
        strip = lambda s: [(c.source, c.criterion, c.verdict, c.split, sorted(c.votes)) for c in s.criteria]  # noqa: E731
        assert strip(a) == strip(b)


def test_judge_equal_to_agent_warns_and_proceeds_016(home, tmp_path: Path) -> None:
    # Nothing listens at the base URL, so the agent's call fails the case; the warning comes first all the same.
    folder = write_suite(tmp_path / "s", [case("one")], None)
    env = {
        "OPENAI_API_KEY": "sk-test-not-a-real-key",
        "OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
        "EVAL_MODEL_TIMEOUT_S": "2",
    }
    result = run_cli(
        "run", "--eval-dir", str(folder), "--agent-model", "openai:same", "--judge-model", "openai:same", env=env
    )
    assert "warning: the judge is the agent's own model (openai:same)" in result.err
    assert result.code == 1  # the run proceeded, and the failed call failed its case
    assert "Summary: 0 passed, 1 failed" in result.out


def test_mock_judge_is_refused_by_every_group_016(home, tmp_path: Path) -> None:
    """CI's standing proof: a judge that passes everything calibrates no group and grades nothing."""
    out = tmp_path / "summary.json"
    result = run_cli("run", "--mock", "--judge-model", "mock:judge", "--json", str(out))
    assert result.code == 0, result.err
    summary = json.loads(out.read_text())
    assert summary["judge_model"] == "mock:judge"
    assert summary["calibration"].keys() == set(GROUP_CRITERIA)
    assert not any(g["calibrated"] for g in summary["calibration"].values())
    assert summary["counts"]["judged-pass"] == 0 and summary["counts"]["judged-fail"] == 0
    assert "0 judged-pass" in result.out and "not calibrated" in result.out

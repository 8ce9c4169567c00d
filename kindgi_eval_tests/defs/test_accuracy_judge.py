"""The judge grader of an accuracy suite: it grades only where it agreed with the suite's own hand-labelled items, in
the `accuracy` group, exactly as the calibration groups (docs/design.md#calibration); uncalibrated, every item is
ungraded, on neither side."""

from __future__ import annotations

import pytest

from kindgi_eval.defs.runs import open_instance, run_chain
from kindgi_eval.inputs import RunSettings, load_suite, suite_key
from kindgi_eval.kinds import consumers, models_of, stored_result, table_named
from kindgi_eval.registry import EvalSuite, database_url, materialize, open_store
from kindgi_eval.rules import accuracy_criterion, wilson
from kindgi_eval.store import read_rows
from kindgi_eval_tests.defs.test_judged_runs import Judge

TENANT = "demo-academy"
CASES = [
    {"id": "price", "input": "how much is the foundation course?", "expectedOutput": "$450"},
    {"id": "days", "input": "when does the foundation course run?", "expectedOutput": "Tuesdays and Thursdays"},
    {"id": "wrong", "input": "how much is the foundation course?", "expectedOutput": "criterion-fail: free"},
]
PAIRS = [
    {"id": "good", "input": "price?", "expectedOutput": "$450", "reply": ["It is $450."], "label": "pass"},
    {"id": "bad", "input": "price?", "expectedOutput": "$450", "reply": ["A BAD reply."], "label": "fail"},
]


def accuracy_run(home, calibration: list[dict]):
    store = open_store(database_url(home.root))
    token = store.issue_token(TENANT, "test")
    spec = {"cases": CASES, "grader": {"adapterId": "judge"}, "calibration": calibration}
    store.publish(
        TENANT,
        token.id,
        EvalSuite(
            id="demo-academy.judged", tenantId=TENANT, version="1.0.0", kind="accuracy", description="", spec=spec
        ),
    )
    folder = materialize(store.latest(TENANT, "demo-academy.judged"), TENANT, home.root, consumers(), store)
    store.close()
    key = suite_key(TENANT, folder)
    settings = RunSettings(eval_dir=str(folder), agent_model="mock:agent", judge_model="openai:fake-judge")
    run_id = run_chain(open_instance(home.root), home.root, settings, key, "accuracy")
    read = lambda asset: read_rows(home.store, table_named(asset), key, run_id)
    statuses = {s.case_id: s.status for s in read("statuses")}
    return (
        stored_result(home.store, key, run_id).figures,
        read("accuracy"),
        read("calibration"),
        read("judge_samples"),
        folder,
        statuses,
    )


def test_a_calibrated_judge_grades_each_item_on_its_expected_output(home, provider_env) -> None:
    server = provider_env(Judge())
    run, items, calibration, samples, folder, statuses = accuracy_run(home, PAIRS)
    assert [(c.group, c.items, c.calibrated) for c in calibration] == [("accuracy", 2, True)]
    assert {i.case_id: i.grade for i in items} == {"price": "correct", "days": "correct", "wrong": "wrong"}
    # docs/design.md#statuses, as for a review entry: the judge's pass is judged-pass, its fail judged-fail
    assert statuses == {"price": "judged-pass", "days": "judged-pass", "wrong": "judged-fail"}
    interval = wilson(2, 3)
    assert (run["correct"], run["wrong"], run["ungraded_items"]) == (2, 1, 0)
    assert (run["accuracy"], run["accuracy_low"], run["accuracy_high"]) == pytest.approx(tuple(interval))
    # each item's request names its own expected output, and no rubric dimension is graded
    criteria = {s.criterion for s in samples if s.subject == "case"}
    assert criteria == {accuracy_criterion(c["expectedOutput"]) for c in CASES}
    assert {s.group for s in samples} == {"accuracy"}
    assert len(server.requests) == 3 * (len(PAIRS) + len(CASES))
    # the calibration items were written out as the suite's calibration set, on the accuracy criterion
    assert [i.criterion for i in load_suite(folder, models_of=models_of).calibration] == [
        accuracy_criterion("$450")
    ] * 2


def test_an_uncalibrated_judge_grades_nothing_and_every_item_is_ungraded(home, provider_env) -> None:
    server = provider_env(Judge())
    run, items, calibration, samples, _, statuses = accuracy_run(
        home, PAIRS[:1]
    )  # no fail label: the group cannot calibrate
    assert [(c.group, c.calibrated) for c in calibration] == [("accuracy", False)]
    assert "No item labelled fail" in calibration[0].note
    assert {i.grade for i in items} == {"ungraded"}
    assert set(statuses.values()) == {"reviewed"}  # never green, never red
    assert (run["accuracy"], run["correct"], run["wrong"], run["ungraded_items"]) == (None, 0, 0, 3)
    assert {s.subject for s in samples} == {"calibration"} and len(server.requests) == 3  # no item was sent to grade


def test_the_accuracy_groups_check_warns_when_its_judge_is_refused(home, provider_env) -> None:
    from kindgi_eval.defs.asset_checks import calibration_checks

    provider_env(Judge())
    _, _, calibration, _, _, _ = accuracy_run(home, PAIRS[:1])
    checks = {c.check_name: c for c in calibration_checks(calibration)}
    assert (
        not checks["accuracy_calibrated"].passed
        and checks["accuracy_calibrated"].metadata["outcome"].value == "refused"
    )
    assert (
        checks["free_text_calibrated"].passed
        and checks["free_text_calibrated"].metadata["outcome"].value == "not applicable"
    )

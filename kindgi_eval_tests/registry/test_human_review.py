"""The human-review kind at publish time, through real HTTP on both backends, and its promotion: a spec that cannot
run is refused (422) naming its field path, and a promotion is the next minor version, published only if no other
version came first (If-Match)."""

from __future__ import annotations

import json

import pytest

from kindgi_eval.kinds import consumers, promotion
from kindgi_eval.kinds.human_review.check import next_minor
from kindgi_eval.registry import MAX_GROWTH, StoredVersion, canonical_json, content_hash, materialize, written_too_large
from kindgi_eval.rules import InputError
from kindgi_eval_tests.registry.conftest import EmptyCatalogue, golden_spec, refused, suite, unchanged

CASES = golden_spec()["cases"][:2]
SPEC = {"rubric": ["Answers what was asked"], "reviewerRole": "sales lead", "cases": CASES}


def test_a_human_review_suite_is_published(registry, caller) -> None:
    me = caller()
    response = me.http.post(
        "/v1/eval-suites", json=suite(me.tenant, f"{me.tenant}.review", kind="human-review", spec=SPEC)
    )
    assert response.status_code == 201, response.text


@pytest.mark.parametrize(
    ("spec", "said"),
    [
        ({"reviewerRole": "lead", "cases": CASES}, ["spec.rubric: required field is missing"]),
        ({**SPEC, "rubric": []}, ["spec.rubric: holds no items"]),
        ({**SPEC, "rubric": "tone"}, ["spec.rubric: must be a list of rubric items"]),
        (
            {**SPEC, "rubric": ["tone", 3, " ", "tone"]},
            [
                "spec.rubric[1]: must be a rubric item",
                "spec.rubric[2]: must be a rubric item",
                "spec.rubric[3]: duplicate rubric item, first given as rubric[0]",
            ],
        ),
        ({"rubric": ["tone"], "cases": CASES}, ["spec.reviewerRole: required field is missing"]),
        ({**SPEC, "reviewerRole": ""}, ["spec.reviewerRole: must be a non-blank string"]),
        (
            {**SPEC, "reviewer": "x"},
            [
                "spec.reviewer: unknown field. A human-review suite's spec holds only rubric, reviewerRole, cases, calibration."
            ],
        ),
        ({**SPEC, "cases": [{"id": "c", "text": "hi"}]}, ["spec.cases[0].expect: required field is missing"]),
        ({"rubric": ["tone"], "reviewerRole": "lead"}, ["spec.cases: required field is missing"]),
        (
            {
                **SPEC,
                "calibration": [{"id": "k", "text": "hi", "reply": ["hello"], "criterion": "tone", "label": "maybe"}],
            },
            ["spec.calibration[0].label:"],
        ),
    ],
    ids=[
        "no-rubric",
        "empty-rubric",
        "rubric-not-list",
        "bad-items",
        "no-role",
        "blank-role",
        "unknown-field",
        "bad-case",
        "no-cases",
        "bad-calibration",
    ],
)
def test_a_spec_that_cannot_run_is_refused_422_naming_the_field_path(registry, caller, spec, said) -> None:
    me = caller()
    with unchanged(registry.store):
        message = refused(
            me.http.post(
                "/v1/eval-suites", json=suite(me.tenant, f"{me.tenant}.review", kind="human-review", spec=spec)
            ),
            422,
            "invalid",
        )
    for words in said:
        assert words in message


def test_the_folder_gives_every_case_the_rubric_items_it_lacks_after_its_own_review() -> None:
    cases = [dict(CASES[0], review=["Is warm", "Answers what was asked"]), dict(CASES[1], review="Is warm")]
    content = consumers()["human-review"].folder({**SPEC, "cases": cases}, EmptyCatalogue())
    lines = content.files["cases.jsonl"].decode().splitlines()
    assert [json.loads(line)["review"] for line in lines] == [
        ["Is warm", "Answers what was asked"],
        ["Is warm", "Answers what was asked"],
    ]
    assert "calibration.jsonl" not in content.files  # absent calibration stays absent
    assert content.params == {"rubric": ["Answers what was asked"], "reviewer_role": "sales lead"}


@pytest.mark.parametrize(
    ("version", "after"), [("1.0.0", "1.1.0"), ("1.4.2", "1.5.0"), ("2.0.0-rc.1", "2.1.0"), ("0.9.9", "0.10.0")]
)
def test_a_promotion_is_the_next_minor_release(version, after) -> None:
    assert next_minor(version) == after


def test_a_promotion_adds_only_new_ids_and_names_the_latest_etag() -> None:
    held = {"id": "a", "text": "hi", "reply": ["hello"], "criterion": "tone", "label": "pass"}
    latest = {
        "suite": {
            "id": "t.review",
            "tenantId": "t",
            "version": "1.2.0",
            "kind": "human-review",
            "description": "d",
            "spec": {**SPEC, "calibration": [held]},
        },
        "hash": "ab" * 32,
    }
    new = dict(held, id="b", label="fail")
    plan = promotion(latest, [dict(held, label="fail"), new])  # `a` is held already: it is left as it is
    assert (plan.added, plan.present, plan.if_match) == (("b",), ("a",), f'"{"ab" * 32}"')
    assert plan.document["version"] == "1.3.0" and plan.document["spec"]["calibration"] == [held, new]
    assert latest["suite"]["spec"]["calibration"] == [held]  # the version read is not edited
    with pytest.raises(ValueError, match="is a 'accuracy' suite"):
        promotion({**latest, "suite": {**latest["suite"], "kind": "accuracy"}}, [new])


def test_a_promotion_planned_before_another_publish_is_refused_412_and_stores_nothing(registry, caller) -> None:
    me = caller()
    suite_id = f"{me.tenant}.review"
    assert (
        me.http.post("/v1/eval-suites", json=suite(me.tenant, suite_id, kind="human-review", spec=SPEC)).status_code
        == 201
    )
    item = {"id": "review-1", "text": "hi", "reply": ["hello"], "criterion": "Answers what was asked", "label": "pass"}
    plan = promotion(me.http.get(f"/v1/eval-suites/{suite_id}").json(), [item])
    # someone publishes 1.0.1 between the read and the promotion's publish: without If-Match the promotion's 1.1.0,
    # built on 1.0.0, would be accepted as the latest and silently drop their change
    other = suite(me.tenant, suite_id, version="1.0.1", kind="human-review", spec={**SPEC, "rubric": ["Is warm"]})
    assert me.http.post("/v1/eval-suites", json=other).status_code == 201
    with unchanged(registry.store):
        refused(
            me.http.post("/v1/eval-suites", json=plan.document, headers={"If-Match": plan.if_match}),
            412,
            "precondition_failed",
        )
    assert me.http.get(f"/v1/eval-suites/{suite_id}").json()["suite"]["spec"]["rubric"] == ["Is warm"]  # theirs stands


def rubric_of(items: int) -> list[str]:
    return [f"Rubric item {n}: the reply does something a person checks by reading it" for n in range(items)]


def many_cases(count: int) -> list[dict]:
    return [{"id": f"c{n}", "text": "How much is it?", "expect": {"escalate": False}} for n in range(count)]


def test_a_version_whose_folder_would_copy_its_rubric_past_the_bound_is_refused_422(registry, caller) -> None:
    # 2,000 rubric items (150 KB) copied into each of 400 cases: 63.6 MB written out of a 0.18 MB version (a 793 KB
    # version wrote 2 GiB at every tick)
    me = caller()
    spec = {"rubric": rubric_of(2_000), "reviewerRole": "lead", "cases": many_cases(400)}
    with unchanged(registry.store):
        message = refused(
            me.http.post(
                "/v1/eval-suites", json=suite(me.tenant, f"{me.tenant}.review", kind="human-review", spec=spec)
            ),
            422,
            "invalid",
        )
    assert "spec.rubric: its 2,000 items, copied into each of the 400 cases" in message
    assert f"more than {MAX_GROWTH} times the suite's own 0.18 MB" in message


@pytest.mark.parametrize(("items", "cases"), [(1, 2), (20, 200), (60, 300), (300, 40), (100, 1_000)])
def test_a_folder_the_check_accepts_is_within_the_bound_of_its_version(items: int, cases: int) -> None:
    spec = {"rubric": rubric_of(items), "reviewerRole": "lead", "cases": many_cases(cases)}
    consumer = consumers()["human-review"]
    assert consumer.check(spec, EmptyCatalogue()) == []
    written = sum(len(data) for data in consumer.folder(spec, EmptyCatalogue()).files.values())
    assert written_too_large(written, len(canonical_json(spec))) is None


@pytest.mark.parametrize(("items", "cases"), [(500, 400), (2_000, 100)])
def test_the_check_refuses_each_version_whose_folder_is_past_the_bound(items: int, cases: int) -> None:
    spec = {"rubric": rubric_of(items), "reviewerRole": "lead", "cases": many_cases(cases)}
    consumer = consumers()["human-review"]
    (problem,) = consumer.check(spec, EmptyCatalogue())
    assert problem.startswith("spec.rubric:")
    written = sum(len(data) for data in consumer.folder(spec, EmptyCatalogue()).files.values())
    assert written_too_large(written, len(canonical_json(spec))) is not None  # what it would write is past it indeed


def test_a_stored_version_past_the_bound_is_never_written_out(tmp_path) -> None:
    # a version stored before the bound: the run that reads it stops before writing anything
    spec = {"rubric": rubric_of(2_000), "reviewerRole": "lead", "cases": many_cases(400)}
    document = suite("acme", "acme.review", kind="human-review", spec=spec)
    stored = StoredVersion(
        "acme.review",
        "1.0.0",
        "human-review",
        content_hash(document),
        canonical_json(document).decode(),
        "2026-12-01T00:00:00.000000Z",
        "tok_1",
    )
    with pytest.raises(InputError, match="spec.rubric: its 2,000 items"):
        materialize(stored, "acme", tmp_path, consumers(), EmptyCatalogue())
    assert not any(path.is_file() for path in tmp_path.rglob("*"))

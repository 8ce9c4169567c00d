"""A 409 on a republished version names the top-level fields in which the content sent differs from the stored one
(`spec`'s own keys where it is an object), through HTTP and through `kindgi-eval suites publish`, on both backends."""

from __future__ import annotations

from pathlib import Path

import pytest

from kindgi_eval.registry.model import differing_fields
from kindgi_eval_tests.conftest import run_cli
from kindgi_eval_tests.registry.conftest import refused, suite, unchanged

CASE = {"id": "price", "text": "How much is it?", "expect": {"escalate": False}}
LABELLED = {
    "id": "cal",
    "text": "how much?",
    "reply": ["$450. Upfront or in instalments?"],
    "criterion": "implicit_concession",
    "label": "pass",
}


@pytest.mark.parametrize(
    ("stored", "sent", "named"),
    [
        ({"description": "a", "spec": {"cases": [1]}}, {"description": "b", "spec": {"cases": [1]}}, ["description"]),
        # spec is an object on both sides: its keys are named, in the order sent, then those only stored had
        (
            {"spec": {"cases": [1], "calibration": [2]}},
            {"spec": {"cases": [3], "grader": {}}},
            ["spec.cases", "spec.grader", "spec.calibration"],
        ),
        ({"spec": {"cases": [1]}}, {"spec": ["not", "an", "object"]}, ["spec"]),
        ({"kind": "conversation", "spec": {}}, {"kind": "accuracy", "spec": {}}, ["kind"]),
        # compared as canonical JSON, as the hash is taken: 1 and 1.0 differ, key order inside a value does not
        (
            {"spec": {"cases": [{"a": 1, "b": 2}], "n": 1}},
            {"spec": {"cases": [{"b": 2, "a": 1}], "n": 1.0}},
            ["spec.n"],
        ),
        ({"description": "a"}, {}, ["description"]),  # a field one side lacks differs
        ({"description": "a"}, {"description": "a"}, []),
    ],
)
def test_differing_fields_names_top_level_fields_and_specs_keys(stored: dict, sent: dict, named: list[str]) -> None:
    assert differing_fields(stored, sent) == named


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"description": "changed"}, "description"),
        ({"spec": {"cases": [CASE], "calibration": [LABELLED]}}, "spec.calibration"),
        (
            {"description": "changed", "spec": {"cases": [{**CASE, "text": "And the price?"}]}},
            "description, spec.cases",
        ),
    ],
)
def test_a_409_on_a_republished_version_names_the_fields_that_differ(
    registry, caller, change: dict, named: str
) -> None:
    me = caller()
    first = me.http.post("/v1/eval-suites", json=suite(me.tenant, spec={"cases": [CASE]}))
    assert first.status_code == 201, first.text
    with unchanged(registry.store):
        message = refused(
            me.http.post("/v1/eval-suites", json={**suite(me.tenant, spec={"cases": [CASE]}), **change}),
            409,
            "conflict",
        )
    assert message == (
        f"suite 'acme.pricing' version 1.0.0: already published with other content (sha256 {first.json()['hash']}; "
        f"the content sent differs in: {named}); a version never changes. Publish this content as a version "
        "greater than 1.0.0."
    )


def test_suites_publish_prints_the_fields_a_republished_folder_differs_in(registry, caller, tmp_path: Path) -> None:
    me = caller()
    env = {"KINDGI_REGISTRY_URL": registry.url, "KINDGI_REGISTRY_TOKEN": me.secret}
    folder = tmp_path / "pricing"
    folder.mkdir()
    (folder / "cases.jsonl").write_text('{"id": "price", "text": "How much is it?", "expect": {"escalate": false}}\n')
    (folder / "calibration.jsonl").write_text(
        '{"id": "cal", "text": "how much?", "reply": ["$450."], "criterion": "implicit_concession", "label": "pass"}\n'
    )
    publish = ("suites", "publish", str(folder), "--id", f"{me.tenant}.pricing", "--version", "1.0.0")
    assert run_cli(*publish, env=env).code == 0
    (folder / "cases.jsonl").write_text('{"id": "price", "text": "And the price?", "expect": {"escalate": false}}\n')
    changed = run_cli(*publish, env=env)
    assert changed.code == 2 and changed.out == "" and len(changed.err.splitlines()) == 1, changed.err
    assert (
        "HTTP 409: " in changed.err
        and "the content sent differs in: spec.cases); a version never changes." in changed.err
    )
    described = run_cli(*publish, "--description", "Pricing questions", env=env)
    assert (
        described.code == 2
        and "the content sent differs in: description, spec.cases); a version never changes." in described.err
    )

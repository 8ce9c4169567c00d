"""The custom kind at publish time, through real HTTP on both backends: a suite whose handler or cases cannot run is
refused (422) naming each field, and nothing is stored; a runnable one is stored with its handler's source."""

from __future__ import annotations

import pytest

from kindgi_eval.kinds import consumers
from kindgi_eval.registry import accepted_kinds
from kindgi_eval_tests.registry.conftest import refused, suite, unchanged

HANDLER = {
    "modulePath": "graders/tone.py",
    "entrypointPath": "grade",
    "source": "def grade(case, reply):\n    return {'pass': True, 'reason': 'ok'}\n",
}
CASES = [{"id": "price", "text": "How much is it?", "expect": {"escalate": False}}]


def test_custom_is_accepted() -> None:
    assert "custom" in accepted_kinds(consumers())


def test_a_custom_suite_is_published_with_its_handler_source(registry, caller) -> None:
    me = caller()
    spec = {"handler": {**HANDLER, "entrypointPath": "Tone.grade"}, "cases": CASES}
    response = me.http.post("/v1/eval-suites", json=suite(me.tenant, f"{me.tenant}.tone", kind="custom", spec=spec))
    assert response.status_code == 201, response.text
    stored = me.http.get(f"/v1/eval-suites/{me.tenant}.tone").json()["suite"]
    assert stored["kind"] == "custom" and stored["spec"]["handler"] == spec["handler"]  # the source is what runs


@pytest.mark.parametrize(
    ("spec", "said"),
    [
        (
            {"cases": CASES},
            ['spec.handler: required field is missing. Give {"modulePath", "entrypointPath", "source"}'],
        ),
        ({"handler": "graders/tone.py", "cases": CASES}, ["spec.handler: must be an object"]),
        (
            {"handler": {**HANDLER, "modulePath": "../other-tenant/cases.py"}, "cases": CASES},
            ["spec.handler.modulePath: must be a relative path of identifiers ending in .py"],
        ),
        (
            {"handler": {**HANDLER, "modulePath": "/etc/passwd.py"}, "cases": CASES},
            ["spec.handler.modulePath: must be a relative path"],
        ),
        (
            {"handler": {**HANDLER, "entrypointPath": "grade()"}, "cases": CASES},
            ["spec.handler.entrypointPath: must be a function's name"],
        ),
        (
            {"handler": {k: v for k, v in HANDLER.items() if k != "source"}, "cases": CASES},
            ["spec.handler.source: required field is missing"],
        ),
        (
            {"handler": {**HANDLER, "source": "x = 1\n" * 50_000}, "cases": CASES},
            ["spec.handler.source: ", "over the 256 KiB a handler may be"],
        ),
        ({"handler": {**HANDLER, "sandbox": "off"}, "cases": CASES}, ["spec.handler.sandbox: unknown field"]),
        (
            {"handler": HANDLER, "cases": [{"id": "price", "text": "hi"}]},
            ["spec.cases[0].expect: required field is missing"],
        ),
        (
            {"handler": HANDLER, "cases": CASES, "timeout": 600},
            ["spec.timeout: unknown field. A custom suite's spec holds handler and cases and calibration."],
        ),
        ({"handler": HANDLER}, ["spec.cases: required field is missing"]),
    ],
    ids=[
        "no-handler",
        "handler-not-object",
        "module-escapes",
        "module-absolute",
        "entrypoint-not-a-name",
        "no-source",
        "source-too-large",
        "handler-unknown-field",
        "case-invalid",
        "spec-unknown-field",
        "no-cases",
    ],
)
def test_a_custom_suite_that_cannot_run_is_refused_and_nothing_is_stored(registry, caller, spec, said) -> None:
    me = caller()
    with unchanged(registry.store):
        response = me.http.post("/v1/eval-suites", json=suite(me.tenant, f"{me.tenant}.tone", kind="custom", spec=spec))
        message = refused(response, 422, "invalid")
    for words in said:
        assert words in message, message

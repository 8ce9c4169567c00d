"""The `statuses` view names, in `failures`, each criterion the judge failed: a `judged-fail` case says why."""

from __future__ import annotations

import json

from kindgi_eval_tests.conftest import run_cli


def test_a_judged_fail_case_names_its_failed_criterion_in_failures(home) -> None:
    done = run_cli("run", "--mock", "--judge-model", "mock:demo-judge")
    assert done.code == 1, done.err  # the demo judge fails the golden set's repeated reply
    rows = json.loads(
        run_cli("sql", "SELECT case_id, status, failures FROM statuses ORDER BY case_id", "--format", "json").out
    )
    judged = [r for r in rows if r["status"] == "judged-fail"]
    assert [r["case_id"] for r in judged] == ["no-verbatim-repeat"]
    (failure,) = judged[0]["failures"]
    assert failure.startswith("judged-fail: [rubric] semantic_repetition: ")
    assert all(r["failures"] == [] for r in rows if r["status"] in ("passed", "judged-pass", "reviewed"))
    assert all(
        r["failures"] and not r["failures"][0].startswith("judged-fail") for r in rows if r["status"] == "failed"
    )

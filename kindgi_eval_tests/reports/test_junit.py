"""`run --junit` and `replay --junit`: JUnit XML that CI systems read, one test case per case, validated against the
JUnit schema Jenkins' xUnit plugin publishes.

`junit-10.xsd` beside this file is that schema (MIT; its licence is kept inside it), as pytest 8.3.4's source
distribution ships it for its own tests (`testing/example_scripts/junit-10.xsd`)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import xmlschema

from kindgi_eval.reports import junit_xml
from kindgi_eval.store import CriterionRow, StatusRow
from kindgi_eval_tests.conftest import files_under, run_cli
from kindgi_eval_tests.reports.test_run_report import run_row

SCHEMA = xmlschema.XMLSchema(Path(__file__).with_name("junit-10.xsd"))


def cases_of(document: bytes) -> dict[str, ET.Element]:
    return {case.get("name"): case for case in ET.fromstring(document).iter("testcase")}


def test_a_judged_run_is_one_test_case_per_case_failures_as_failures_and_verdicts_as_properties(
    home, tmp_path: Path
) -> None:
    done = run_cli("run", "--mock", "--judge-model", "mock:demo-judge", "--junit", str(tmp_path / "junit.xml"))
    assert done.code == 1, done.err  # a judged-fail
    document = (tmp_path / "junit.xml").read_bytes()
    SCHEMA.validate(document)
    statuses = {
        row["case_id"]: row["status"]
        for row in json.loads(run_cli("sql", "SELECT case_id, status FROM statuses", "--format", "json").out)
    }
    cases = cases_of(document)
    assert set(cases) == set(statuses)
    suite = ET.fromstring(document).find("testsuite")
    failing = [c for c, s in statuses.items() if s in ("failed", "judged-fail")]
    assert failing and int(suite.get("failures")) == len(failing)
    assert int(suite.get("skipped")) == sum(1 for s in statuses.values() if s == "reviewed")
    assert int(suite.get("tests")) == len(statuses) == 39  # 36 cases and 3 scenarios
    for case_id, status in statuses.items():
        failure, skipped = cases[case_id].find("failure"), cases[case_id].find("skipped")
        assert (failure is not None) == (status in ("failed", "judged-fail")), case_id
        assert (skipped is not None) == (status == "reviewed"), case_id
        if status == "judged-fail":
            assert (
                failure.get("type") == "judged-fail" and "judged fail:" in failure.text and "evidence:" in failure.text
            )
    properties = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert properties["judge"] == "mock:demo-judge" and properties["run_id"] == suite.get("id")
    votes = [value for name, value in properties.items() if ".criterion." in name]
    assert votes and all("(votes " in value for value in votes)
    assert any(value.count("fail") >= 1 and "split" in value for value in votes)  # the demo judge's split review entry


def test_a_run_without_a_judge_skips_its_reviewed_cases_saying_what_they_wait_for(home, tmp_path: Path) -> None:
    done = run_cli("run", "--mock", "--junit", str(tmp_path / "junit.xml"))
    assert done.code == 0, done.err
    document = (tmp_path / "junit.xml").read_bytes()
    SCHEMA.validate(document)
    skipped = [c for c in cases_of(document).values() if c.find("skipped") is not None]
    assert len(skipped) == 5  # the golden set's four reviewed cases and its reviewed scenario
    assert all(
        c.find("skipped").get("message").startswith("every assertion held, but the case needs a verdict")
        for c in skipped
    )
    assert all("ungraded: " in c.find("skipped").text for c in skipped)


def test_a_replay_writes_its_own_junit(home, tmp_path: Path) -> None:
    assert run_cli("run", "--mock").code == 0
    (run_id,) = [r["run_id"] for r in json.loads(run_cli("sql", "SELECT run_id FROM runs", "--format", "json").out)]
    replayed = run_cli(
        "replay", "--from", run_id, "--judge-model", "mock:demo-judge", "--junit", str(tmp_path / "replay.xml")
    )
    assert replayed.code == 1, replayed.err
    document = (tmp_path / "replay.xml").read_bytes()
    SCHEMA.validate(document)
    assert ET.fromstring(document).find("testsuite").get("id") != run_id  # the replay is a run of its own


def test_a_junit_path_whose_folder_is_missing_is_refused_before_anything_runs(home, tmp_path: Path) -> None:
    done = run_cli("run", "--mock", "--junit", str(tmp_path / "no" / "junit.xml"))
    assert done.code == 2 and done.err.startswith(f"error: {tmp_path / 'no' / 'junit.xml'}: its folder does not exist.")
    assert "--junit" in done.err and files_under(home.root / "store") == []


def test_untrusted_text_cannot_break_the_document() -> None:
    attack = "</system-out></testcase><testcase name='forged'/>\x00\x1b[31m ]]> \ud800 &amp; <!-- -->"
    criterion = CriterionRow(
        source="review",
        criterion="no promise",
        group="free_text",
        verdict="fail",
        split=False,
        votes=["fail", "fail", "pass"],
        evidence=attack,
        reason=attack,
    )
    row = StatusRow(
        case_id="c\x07<1>",
        status="judged-fail",
        failures=[attack],
        messages=[attack, "second"],
        escalate=False,
        reason=None,
        latency_ms=12.5,
        error=None,
        review=["no promise"],
        criteria=[criterion],
    )
    document = junit_xml("run-1", "acme@acme.x", run_row(cases=1, passed=0, judged_fail=1), [row])
    SCHEMA.validate(document)
    (case,) = ET.fromstring(document).iter("testcase")
    assert case.get("name") == "c\ufffd<1>" and case.get("time") == "0.013"
    kept = attack.replace("\x00", "\ufffd").replace("\x1b", "\ufffd").replace("\ud800", "\ufffd")
    assert case.find("system-out").text == f"{kept}\nsecond"
    assert case.find("failure").get("message") == kept


@pytest.mark.parametrize(
    ("state", "element"),
    [
        ("passed", None),
        ("judged-pass", None),
        ("failed", "failure"),
        ("judged-fail", "failure"),
        ("reviewed", "skipped"),
    ],
)
def test_each_status_maps_to_what_a_ci_system_shows(state: str, element: str | None) -> None:
    row = StatusRow(
        case_id="c1",
        status=state,
        failures=["reply must contain '$450'"] if state == "failed" else [],
        messages=["Hello"],
        escalate=False,
        reason=None,
        latency_ms=1.0,
        error=None,
        review=[],
        criteria=[],
    )
    document = junit_xml("run-1", "acme@acme.x", run_row(), [row])
    SCHEMA.validate(document)
    (case,) = ET.fromstring(document).iter("testcase")
    found = [child.tag for child in case if child.tag in ("failure", "skipped", "error")]
    assert found == ([element] if element else [])

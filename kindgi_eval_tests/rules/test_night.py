"""A night's findings for one suite, table-driven: the latest run against the one before it."""

from __future__ import annotations

import pytest

from kindgi_eval.rules import GroupAgreement, RunFacts, alerted, is_worse, suite_findings, worst_first
from kindgi_eval.rules.night import Finding, pass_rate_drop


def run(run_id: str, statuses: dict[str, str] | None = None, **facts) -> RunFacts:
    return RunFacts(
        run_id=run_id,
        started_at="2026-12-01T02:00:00",
        state=facts.pop("state", "succeeded"),
        statuses=statuses or {},
        **facts,
    )


def group(
    name: str, *, items: int = 2, calibrated: bool = True, samples: int = 6, invalid: int = 0, causes=()
) -> GroupAgreement:
    return GroupAgreement(
        group=name,
        agreement=1.0 if calibrated else 0.5,
        kappa=None,
        items=items,
        pass_labels=1,
        fail_labels=1,
        calibrated=calibrated,
        note=f"{name} note",
        samples=samples,
        invalid_samples=invalid,
        invalid_causes=list(causes),
    )


ALL_PASS = {f"c{i}": "passed" for i in range(10)}


@pytest.mark.parametrize(
    ("latest", "before", "expected"),
    [
        # nothing changed: nothing to say
        (run("b", ALL_PASS), run("a", ALL_PASS), {}),
        # no run that night
        (None, run("a", ALL_PASS), {"missing_run": []}),
        # a failed run says only that it failed, whatever the run before
        (run("b", state="failed", error="boom"), run("a", ALL_PASS), {"run_failed": []}),
        (run("b", state="stopped"), None, {"run_failed": []}),
        # one case newly failing: named; one of ten is no pass-rate drop beyond chance
        (run("b", {**ALL_PASS, "c3": "failed"}), run("a", ALL_PASS), {"new_failures": ["c3"]}),
        # judged-fail counts as failing; failed -> judged-fail was failing already
        (
            run("b", {"x": "judged-fail", "y": "judged-fail"}),
            run("a", {"x": "judged-pass", "y": "failed"}),
            {"new_failures": ["x"]},
        ),
        # fixed: failing before, not now (reviewed is not failing)
        (run("b", {"x": "reviewed", "y": "passed"}), run("a", {"x": "failed", "y": "passed"}), {"fixed": ["x"]}),
        # a case only in the latest run is neither new failure nor fixed (it has nothing to be compared with)
        (run("b", {**ALL_PASS, "new": "failed"}), run("a", ALL_PASS), {}),
        # seven of ten stop passing: the paired interval lies below zero, so the drop is named with them
        (
            run("b", {**ALL_PASS, **{f"c{i}": "failed" for i in range(7)}}),
            run("a", ALL_PASS),
            {"pass_rate_drop": [f"c{i}" for i in range(7)], "new_failures": [f"c{i}" for i in range(7)]},
        ),
        # passing -> reviewed lowers the pass rate without failing: a drop (all ten), no new failure
        (
            run("b", {c: "reviewed" for c in ALL_PASS}),
            run("a", {c: "judged-pass" for c in ALL_PASS}),
            {"pass_rate_drop": sorted(ALL_PASS)},
        ),
        # the first run of a suite: nothing to compare, only its own judge looked at
        (run("b", {"x": "failed"}), None, {}),
    ],
)
def test_findings_of_a_suite(latest, before, expected) -> None:
    found = suite_findings("t.s", latest, before)
    assert {f.kind: f.case_ids for f in found} == expected
    assert is_worse(found) == any(k != "fixed" for k in expected)


def test_findings_are_listed_worst_first_and_name_the_command_that_shows_more() -> None:
    latest = run("b", {**ALL_PASS, **{f"c{i}": "failed" for i in range(8)}, "c9": "passed"})
    before = run("a", {**ALL_PASS, "c9": "failed"})
    found = suite_findings("t.s", latest, before)
    assert [f.kind for f in found] == ["pass_rate_drop", "new_failures", "fixed"]
    assert {f.command for f in found} == {"kindgi-eval diff a b"}
    drop = found[0]
    # 8 down, 1 up of 10: -0.7, and the bootstrap interval below zero
    assert drop.change == pytest.approx(-0.7) and drop.high < 0 and drop.low <= -0.7


def test_a_pass_rate_drop_within_chance_is_not_a_finding() -> None:
    # one of ten down: the interval reaches zero
    assert (
        pass_rate_drop(
            {"a": "passed", **{f"c{i}": "passed" for i in range(9)}},
            {"a": "failed", **{f"c{i}": "passed" for i in range(9)}},
            ["a", *(f"c{i}" for i in range(9))],
        )
        is None
    )
    assert pass_rate_drop({}, {}, []) is None


@pytest.mark.parametrize(
    ("judge", "groups", "expected_groups", "said"),
    [
        (None, [group("free_text", calibrated=False)], None, None),  # no judge: nothing to say of one
        ("openai:j", [group("free_text"), group("semantic_repetition")], None, None),  # every group counted
        (
            "openai:j",
            [group("free_text", calibrated=False), group("semantic_repetition")],
            ["free_text"],
            "free_text note",
        ),
        (
            "openai:j",
            [group("free_text", calibrated=False, items=0)],
            None,
            None,
        ),  # a group without items has nothing to refuse
        # every sample invalid: the judge was down, and the cause is named
        (
            "openai:j",
            [
                group("free_text", calibrated=False, invalid=6, causes=["404 not found"]),
                group("implicit_concession", calibrated=False, invalid=6, causes=["404 not found"]),
            ],
            ["free_text", "implicit_concession"],
            "404 not found",
        ),
    ],
)
def test_judge_not_counted(judge, groups, expected_groups, said) -> None:
    found = suite_findings("t.s", run("b", ALL_PASS, judge=judge, groups=groups), None)
    if expected_groups is None:
        assert found == []
        return
    (finding,) = found
    assert finding.kind == "judge_not_counted" and finding.groups == expected_groups and said in finding.detail
    assert finding.command == "kindgi-eval report b --html b.html"


def test_missing_and_failed_runs_say_the_night_and_the_error() -> None:
    (missing,) = suite_findings("t.s", None, None, night="2026-12-01")
    assert missing.detail == "no run of t.s on 2026-12-01."
    (failed,) = suite_findings("t.s", run("b", state="failed", error="tenant.toml: not found"), None)
    assert failed.detail == "run b failed: tenant.toml: not found"


def finding(kind: str, cases: int = 0) -> Finding:
    return Finding(kind=kind, suite="s", case_ids=[f"c{i}" for i in range(cases)], detail="", command="")


def test_tenants_are_ordered_worst_first() -> None:
    blocks = {
        "quiet": [],
        "fixed": [finding("fixed", 3)],
        "one-failure": [finding("new_failures", 1)],
        "two-failures": [finding("new_failures", 2)],
        "judge": [finding("judge_not_counted")],
        "failed": [finding("run_failed")],
        "missing": [finding("missing_run")],
    }
    assert worst_first(blocks) == ["failed", "missing", "two-failures", "one-failure", "judge", "fixed", "quiet"]


def test_alert_on_narrows_what_is_sent_and_fixed_is_never_sent() -> None:
    found = [finding("new_failures", 1), finding("fixed", 1), finding("missing_run")]
    assert [f.kind for f in alerted(found, ["new_failures", "missing_run", "fixed"])] == ["new_failures", "missing_run"]
    assert [f.kind for f in alerted(found, ["missing_run"])] == ["missing_run"]

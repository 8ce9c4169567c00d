"""Comparing two runs, the pure part: which case got worse, which run a prefix names, which two runs --suite takes."""

from __future__ import annotations

import itertools

import pytest

from kindgi_eval.reports.diff import (
    RunPair,
    StoredRun,
    diff_runs,
    got_worse,
    is_worse,
    latest_pair,
    matching_run_ids,
    render_diff,
)
from kindgi_eval.rules.statuses import FAILING, STATUSES
from kindgi_eval.store.rows import MetricRow, RunRow, StatusRow

GREEN = ("passed", "judged-pass", "reviewed")
RED = ("failed", "judged-fail")


def test_the_green_and_red_statuses_are_every_status() -> None:
    # the table below is complete only while these two sets split the five statuses
    assert set(GREEN) | set(RED) == set(STATUSES) and set(RED) == FAILING


@pytest.mark.parametrize(("a", "b"), list(itertools.product((*STATUSES, None), repeat=2)))
def test_is_worse_over_every_pair_of_statuses(a, b) -> None:
    # worse exactly when A was green and B is red, or a judged pass lost its verdict; None is a case absent from that run
    expected = (a in GREEN and b in RED) or (a, b) == ("judged-pass", "reviewed")
    assert is_worse(a, b) is expected


@pytest.mark.parametrize(
    ("a", "b", "worse"),
    [
        ("passed", "failed", True),
        ("reviewed", "judged-fail", True),  # an ungraded review case that a judge now fails did get worse
        ("judged-pass", "failed", True),
        ("failed", "judged-fail", False),  # already failing: failing another way is no new regression
        ("passed", "reviewed", False),  # reviewed is not failing: it only lacks a verdict
        ("judged-pass", "reviewed", True),  # the verdict that passed it is lost: its evidence is gone
        ("reviewed", "judged-pass", False),  # better: a verdict now
        (None, "failed", False),  # a case new in B that fails: nothing that worked broke; `run` exits 1 for it
        ("passed", None, False),  # a case gone from B: it cannot fail
        ("failed", "passed", False),  # better
    ],
)
def test_is_worse_on_the_rows_that_need_a_reason(a, b, worse) -> None:
    assert is_worse(a, b) is worse


def run_row(started_at: str, finished_at: str) -> RunRow:
    return RunRow(
        tenant="demo-academy", eval_dir="evals/golden", suite_hash="s", config_hash="c", agent="mock:agent",
        judge=None, judge_prompt_hash=None, code_version="v", replies_from="r", started_at=started_at,
        finished_at=finished_at, cases=0, passed=0, failed=0, judged_fail=0, judged_pass=0, reviewed=0,
        ungraded=0, agent_usd=0.0, judge_usd=0.0, cost_unknown=False, stages=[], uncovered=[],
    )  # fmt: skip


def status_row(case_id: str, status: str) -> StatusRow:
    return StatusRow(
        case_id=case_id, status=status, failures=[], messages=[], escalate=False, reason=None, latency_ms=0.0,
        error=None, review=[], criteria=[],
    )  # fmt: skip


def stored(run_id: str, statuses: dict[str, str]) -> StoredRun:
    row = run_row("2026-11-30T02:00:00+00:00", "2026-11-30T02:00:05+00:00")
    rows = [status_row(i, s) for i, s in statuses.items()]
    return StoredRun(run_id=run_id, run=row, statuses=rows, calibration=[], replies=[])


def test_diff_marks_the_cases_that_got_worse() -> None:
    a = stored("a", {"kept": "passed", "broke": "passed", "was-reviewed": "reviewed", "fixed": "failed"})
    b = stored(
        "b", {"kept": "passed", "broke": "failed", "was-reviewed": "judged-fail", "fixed": "passed", "new": "failed"}
    )
    d = diff_runs(a, b)
    assert {c.case_id: c.worse for c in d.statuses} == {
        "broke": True,
        "was-reviewed": True,
        "fixed": False,
        "new": False,
    }
    assert [c.case_id for c in got_worse(d)] == ["broke", "was-reviewed"]
    text = render_diff(d, a.run, b.run)
    assert "  broke: passed -> failed (worse)\n" in text and "  new: absent -> failed\n" in text
    # read backwards, only the case that was fixed got worse; `broke` and `was-reviewed` got better
    assert [c.case_id for c in got_worse(diff_runs(b, a))] == ["fixed"]


IDS = [
    "3f9c2a1e-0000-4000-8000-000000000001",
    "3f9c2a1e-0000-4000-8000-000000000002",  # shares its first eight characters with the one above
    "8d04b7c5-0000-4000-8000-000000000003",
]


@pytest.mark.parametrize(
    ("prefix", "matches"),
    [
        ("8d04b7c5", [IDS[2]]),  # the eight characters the UI shows
        ("8", [IDS[2]]),  # one character is enough while it is unique
        (IDS[0], [IDS[0]]),  # a whole id is its own match
        ("3f9c2a1e", IDS[:2]),  # ambiguous: both, sorted
        ("3f9c2a1e-0000-4000-8000-00000000000", IDS[:2]),  # ambiguous to the last character
        ("ffff", []),  # unknown
        ("", []),  # the empty prefix would begin every id: it names none
        ("3F9C", []),  # run ids are lower case, and matching is exact
        ("*", []),  # no pattern syntax: a prefix is plain text
    ],
)
def test_matching_run_ids(prefix, matches) -> None:
    assert matching_run_ids(prefix, IDS) == matches


def test_an_exact_id_wins_over_a_longer_id_it_begins() -> None:
    # run ids are UUIDs of one length, but a full id must never be ambiguous whatever ids the store holds
    assert matching_run_ids("abc", ["abc", "abcd"]) == ["abc"]


def test_latest_pair_is_the_last_two_by_start_time() -> None:
    runs = {
        "late": run_row("2026-11-30T02:00:00+00:00", "2026-11-30T02:01:00+00:00"),
        "early": run_row("2026-11-28T02:00:00+00:00", "2026-11-28T02:01:00+00:00"),
        "middle": run_row("2026-11-29T02:00:00+00:00", "2026-11-30T03:00:00+00:00"),  # finished last, started second
    }
    assert latest_pair(runs) == RunPair(a="middle", b="late")


def test_latest_pair_breaks_a_tie_of_start_times_by_finish_then_id() -> None:
    same = "2026-11-30T02:00:00+00:00"
    runs = {"y": run_row(same, "2026-11-30T02:00:09+00:00"), "x": run_row(same, "2026-11-30T02:00:07+00:00")}
    assert latest_pair(runs) == RunPair(a="x", b="y")
    tied = {"y": run_row(same, same), "x": run_row(same, same)}
    assert latest_pair(tied) == RunPair(a="x", b="y")


def test_latest_pair_needs_two_runs() -> None:
    with pytest.raises(ValueError, match="comparing needs two runs, got 1"):
        latest_pair({"only": run_row("2026-11-30T02:00:00+00:00", "2026-11-30T02:00:01+00:00")})


@pytest.mark.parametrize(
    ("hash_b", "judge", "replies_line", "suite_line"),
    [
        ("s", "openai:j", "Replies: the same, so every change below is the judge's, not the agent's", None),
        # the suite changed: a change may be the suite's own, so it is never called the judge's
        (
            "t",
            "openai:j",
            "Replies: the same, so no change below is the agent's",
            "Suite: different content (sha256 s -> t), so changes below may be the suite's",
        ),
        # no judge in either run: nothing is said of judges
        ("s", None, "Replies: the same, so no change below is the agent's", None),
    ],
)
def test_diff_says_first_whether_the_two_runs_evaluated_the_same_suite_content(
    hash_b, judge, replies_line, suite_line
) -> None:
    a, b = stored("a", {"one": "passed"}), stored("b", {"one": "failed"})
    a = a.model_copy(update={"run": a.run.model_copy(update={"judge": judge})})
    b = b.model_copy(update={"run": b.run.model_copy(update={"suite_hash": hash_b, "judge": judge})})
    d = diff_runs(a, b)
    assert d.same_suite is (hash_b == "s")
    text = render_diff(d, a.run, b.run)
    lines = text.splitlines()
    assert lines[2:4] == ([suite_line] if suite_line else []) + [replies_line] + ([] if suite_line else [""])
    assert ("judge" in text) is (judge is not None)


def judged(run_id: str, verdicts: dict[str, str]) -> StoredRun:
    """A run of one passed case whose review criteria got these verdicts."""
    from kindgi_eval.store.rows import CriterionRow

    criteria = [
        CriterionRow(
            source="review",
            criterion=c,
            group="free_text",
            verdict=v,
            split=False,
            votes=[],
            evidence="quoted" if v != "ungraded" else "",
            reason="",
        )
        for c, v in verdicts.items()
    ]
    run = stored(run_id, {"case": "reviewed"})
    return run.model_copy(update={"statuses": [run.statuses[0].model_copy(update={"criteria": criteria})]})


def test_diff_keeps_grading_changes_apart_from_changes_of_verdict() -> None:
    # a newly calibrated judge grades five criteria that were ungraded; one real verdict flips from pass to fail
    a = judged(
        "a", {"c1": "ungraded", "c2": "ungraded", "c3": "ungraded", "c4": "ungraded", "flips": "pass", "lost": "pass"}
    )
    b = judged("b", {"c1": "pass", "c2": "pass", "c3": "pass", "c4": "fail", "flips": "fail", "lost": "ungraded"})
    d = diff_runs(a, b)
    assert [(c.criterion, c.grading) for c in d.criteria] == [
        ("c1", True),
        ("c2", True),
        ("c3", True),
        ("c4", True),
        ("flips", False),
        ("lost", True),
    ]
    text = render_diff(d, a.run, b.run)
    body = text[text.index("Status changes") : text.index("Cost:")]
    assert body == (
        "Status changes: 0\n"
        "Verdict changes: 1\n"
        "  case [review] flips: pass -> fail\n"
        '    evidence A: "quoted"  B: "quoted"\n'
        "Grading changes: 5 (graded in one run, ungraded in the other; no verdict changed)\n"
        "  pass -> ungraded: 1\n"
        "    case [review] lost\n"
        "  ungraded -> fail: 1\n"
        "    case [review] c4\n"
        "  ungraded -> pass: 3\n"  # counted, not named: the many a newly calibrated judge gives
    )
    assert '"grading":true' in d.model_dump_json().replace(" ", "")


def rate(
    value: float | None, low: float | None, high: float | None, group: str | None = "implicit_concession"
) -> MetricRow:
    name = "pass_rate_corrected" if group is None else "judged_fail_rate_corrected"
    return MetricRow(
        name=name, value=value, low=low, high=high, method="rogan-gladen, fieller 95%", group=group, count=1, out_of=10
    )


def with_rates(run_id: str, *rates: MetricRow) -> StoredRun:
    observed = [r.model_copy(update={"name": "judged_fail_rate"}) for r in rates if r.group is not None]
    return stored(run_id, {}).model_copy(update={"metrics": [*observed, *rates]})


@pytest.mark.parametrize(
    ("a", "b", "changed", "said"),
    [
        # the intervals overlap: the move is within what the judge's error and the samples' size explain
        ((0.10, 0.00, 0.40), (0.30, 0.10, 0.60), False, "intervals overlap, no change called"),
        # they do not: a change
        ((0.05, 0.00, 0.15), (0.40, 0.20, 0.60), True, "changed"),
        # touching at one point is an overlap
        ((0.05, 0.00, 0.20), (0.40, 0.20, 0.60), False, "intervals overlap, no change called"),
        ((0.10, 0.00, 0.40), (0.10, 0.00, 0.40), False, "no change"),
        # a run with no corrected rate (nothing graded, no correction) is compared with nothing
        ((0.10, 0.00, 0.40), (None, None, None), False, "not comparable"),
    ],
)
def test_a_corrected_rate_changes_only_where_the_intervals_do_not_overlap(a, b, changed: bool, said: str) -> None:
    d = diff_runs(with_rates("a", rate(*a), rate(*a, group=None)), with_rates("b", rate(*b), rate(*b, group=None)))
    assert [(r.figure, r.group, r.changed) for r in d.judged_rates] == [
        ("judged_fail_rate_corrected", "implicit_concession", changed),
        ("pass_rate_corrected", None, changed),
    ]
    text = render_diff(d, run_row("x", "x"), run_row("y", "y")).splitlines()
    assert text[
        text.index("Corrected judged rates (A -> B; a change only where the 95% intervals do not overlap):") + 1
    ].endswith(f": {said}")
    assert d.model_dump()["judged_rates"][0]["changed"] is changed  # --json says it too


def test_runs_without_judged_rates_show_none() -> None:
    d = diff_runs(stored("a", {}), stored("b", {}))
    assert d.judged_rates == []
    assert "Corrected judged rates" not in render_diff(d, run_row("x", "x"), run_row("y", "y"))

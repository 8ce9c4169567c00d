"""The HTML report of a run: opened in headless Chromium, it filters to failures, charts every run and reaches no
network; rendered from rows, it shows each case's conversation, the run's result, its kind's figure and a labelled
chart of a pass rate that judged-fail cases can only lower."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from kindgi_eval.kinds import KindResult
from kindgi_eval.kinds.accuracy.stage import AccuracyRow
from kindgi_eval.kinds.custom.stage import CustomRow
from kindgi_eval.kinds.regression.stage import RegressionRow
from kindgi_eval.reports.html_report import RunPage, render_html
from kindgi_eval.reports.reading import pass_rate
from kindgi_eval.rules import Case
from kindgi_eval.store import RunRow, StatusRow
from kindgi_eval_tests.conftest import GOLDEN, run_cli
from kindgi_eval_tests.defs.test_ui_browser import CHROMIUM, CHROMIUM_FLAGS, _browser_or_skip


def run_id_of(result) -> str:
    return next(line for line in result.err.splitlines() if line.startswith("run ")).split()[1]


@pytest.fixture
def three_runs(home, tmp_path: Path) -> tuple[Path, list[str]]:
    """A copy of the golden suite run three times; before the third, one case is made to fail."""
    folder = tmp_path / "golden"
    folder.mkdir()
    (folder / "calibration.jsonl").write_bytes((GOLDEN / "calibration.jsonl").read_bytes())
    lines = (GOLDEN / "cases.jsonl").read_text().splitlines()
    (folder / "cases.jsonl").write_text("\n".join(lines) + "\n")
    runs = [run_id_of(run_cli("run", "--mock", "--eval-dir", str(folder))) for _ in range(2)]
    first = json.loads(lines[0])
    first["must_contain"] = ["words the demo agent never says <script>alert(1)</script>"]
    (folder / "cases.jsonl").write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n")
    failing = run_cli("run", "--mock", "--eval-dir", str(folder))
    assert failing.code == 1
    runs.append(run_id_of(failing))
    return folder, runs


def test_report_page_filters_to_failures_charts_each_run_and_stays_offline(home, three_runs, tmp_path: Path) -> None:
    _browser_or_skip()
    from playwright.sync_api import sync_playwright

    _, runs = three_runs
    out = tmp_path / "report.html"
    result = run_cli("report", runs[-1][:8], "--html", str(out))
    assert result.code == 0, result.err
    html = out.read_text()
    assert "<script>alert(1)</script>" not in html  # the case's untrusted text is escaped
    requests: list[str] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_FLAGS)
        try:
            page = browser.new_page(viewport={"width": 1600, "height": 1200})
            page.on("request", lambda request: requests.append(request.url))
            page.goto(out.as_uri())
            cases = page.locator("#cases .case")
            assert cases.count() == 36
            page.check("#failures-only")
            shown = page.locator("#cases .case:not(.hidden)")
            assert shown.count() == 1 and shown.first.get_attribute("data-status") == "failed"
            assert "words the demo agent never says" in shown.first.inner_text()
            page.uncheck("#failures-only")
            assert page.locator("#cases .case:not(.hidden)").count() == 36
            assert page.locator("#pass-rate circle.point").count() == 3  # one point per run of the suite
            assert page.locator("#pass-rate circle.current").get_attribute("data-run") == runs[-1]
            page.screenshot(path=str(tmp_path / "report.png"), full_page=False)
        finally:
            browser.close()
    assert [u for u in requests if not u.startswith("file://")] == []  # nothing but the file itself


def test_report_of_an_earlier_run_charts_only_the_runs_up_to_it(home, three_runs, tmp_path: Path) -> None:
    _, runs = three_runs
    out = tmp_path / "first.html"
    assert run_cli("report", runs[1], "--html", str(out)).code == 0
    assert len(re.findall(r'<circle class="point', out.read_text())) == 2


def test_report_needs_a_folder_that_exists_and_a_known_run(home, tmp_path: Path) -> None:
    missing = run_cli("report", "nosuch", "--html", str(tmp_path / "no" / "r.html"))
    assert missing.code == 2 and "--html path" in missing.err
    unknown = run_cli("report", "nosuch", "--html", str(tmp_path / "r.html"))
    assert unknown.code == 2 and "no run 'nosuch'" in unknown.err


# The page's parts, rendered from rows made here: what each part must show, and what it must not.


def summary(**fields: object) -> RunRow:
    """A run's summary row: four cases, all passed, unless `fields` say otherwise."""
    base = {
        "tenant": "demo-academy",
        "eval_dir": "evals/x",
        "suite_hash": "h",
        "config_hash": "c",
        "agent": "mock:agent",
        "judge": None,
        "judge_prompt_hash": None,
        "code_version": "v",
        "replies_from": "run-1",
        "started_at": "2026-11-02T02:00:00+00:00",
        "finished_at": "2026-11-02T02:01:00+00:00",
        "cases": 4,
        "passed": 4,
        "failed": 0,
        "judged_fail": 0,
        "judged_pass": 0,
        "reviewed": 0,
        "ungraded": 0,
        "agent_usd": 0.0,
        "judge_usd": 0.0,
        "cost_unknown": False,
        "stages": [],
        "uncovered": [],
    }
    return RunRow(**{**base, **fields})


def status(case_id: str, outcome: str = "passed", messages: tuple[str, ...] = ("The reply.",)) -> StatusRow:
    return StatusRow(
        case_id=case_id,
        status=outcome,
        failures=[],
        messages=list(messages),
        escalate=False,
        reason=None,
        latency_ms=1.0,
        error=None,
        review=[],
        criteria=[],
    )


def a_case(
    case_id: str, text: str = "how much is it?", history: tuple[tuple[str, str], ...] = (), nudge: bool = False
) -> Case:
    line = {
        "id": case_id,
        "text": text,
        "expect": {"escalate": False},
        "nudge": nudge,
        "history": [{"role": role, "text": said} for role, said in history],
    }
    return Case.model_validate_json(json.dumps(line))


def page_of(statuses: list[StatusRow], run: RunRow | None = None, figures: dict | None = None, **parts: object) -> str:
    run = run or summary(
        cases=len(statuses),
        passed=sum(s.status == "passed" for s in statuses),
        failed=sum(s.status == "failed" for s in statuses),
        reviewed=sum(s.status == "reviewed" for s in statuses),
    )
    fields = {
        "run_id": "run-1",
        "result": KindResult(run, figures or {}),
        "statuses": statuses,
        "outcomes": [],
        "samples": [],
        "calibration": [],
        "history": [("run-1", run)],
        **parts,
    }
    return render_html(RunPage(**fields), "demo-academy.x")


def section(html: str, case_id: str) -> str:
    """The case grid's section of one case."""
    start = html.index(f"</span> {case_id}</h3>")
    return html[start : html.index("</section>", start)]


def test_each_case_shows_the_last_turns_and_the_contacts_message_above_its_reply_all_escaped() -> None:
    turns = (("user", "first"), ("agent", "second"), ("user", "third <b>"), ("agent", "x" * 400), ("user", "fifth"))
    cases = [
        a_case("asked", "what does it cost? <script>alert(1)</script>", turns),
        a_case("nudged", "never shown", nudge=True),
    ]
    html = page_of([status("asked"), status("nudged")], cases=cases)
    asked = section(html, "asked")
    assert "first" not in asked and "second" not in asked  # the last three turns only
    assert "<b>contact:</b> third &lt;b&gt;" in asked and "<b>contact:</b> fifth" in asked
    assert "x" * 299 + "…" in asked and "x" * 300 not in asked  # a long turn is clipped
    message = "what does it cost? &lt;script&gt;alert(1)&lt;/script&gt;"
    assert message in asked and "<script>alert" not in html
    assert asked.index("fifth") < asked.index(message) < asked.index("The reply.")
    nudged = section(html, "nudged")
    assert "(follow-up: no contact message)" in nudged and "never shown" not in nudged


def test_the_result_is_failing_needs_review_or_passed_as_the_runs_tag_says() -> None:
    assert "<b>failing</b>" in page_of([status("a"), status("b", "failed"), status("c", "reviewed")])
    assert "<b>needs-review</b>" in page_of([status("a"), status("c", "reviewed")])  # a review-only run is not a pass
    assert "<b>passed</b>" in page_of([status("a")])


def kind_section(html: str) -> str:
    return html[html.index('<section id="kind">') : html.index("</section>", html.index('<section id="kind">'))]


def test_an_accuracy_run_shows_its_figure_with_its_interval_and_its_wrong_items() -> None:
    run = summary(suite_kind="accuracy", cases=3, passed=2, failed=1)
    figures = dict(accuracy=2 / 3, accuracy_low=0.208, accuracy_high=0.939, correct=2, wrong=1, ungraded_items=0)
    grades = [
        AccuracyRow(case_id="price", grader="contains", expected_output="$450", grade="correct", detail="found"),
        AccuracyRow(
            case_id="discount",
            grader="contains",
            expected_output="20% <off>",
            grade="wrong",
            detail='missing "20% off"',
        ),
    ]
    shown = kind_section(page_of([status("price"), status("discount", "failed")], run, figures, own=grades))
    assert "Accuracy: 0.667, 2 of 3 graded items correct (95% Wilson interval 0.208 to 0.939)" in shown
    assert "<td>discount</td><td>wrong</td><td>20% &lt;off&gt;</td>" in shown and "price" not in shown


def test_a_regression_run_names_its_baseline_and_the_cases_that_moved() -> None:
    run = summary(suite_kind="regression", cases=3, passed=2, failed=1)
    figures = dict(baseline_run="base-run", improved=1, regressed=1, unchanged=1, pass_rate_change=None)
    moved = [
        RegressionRow(
            case_id="up", baseline_run="base-run", baseline_status="failed", status="passed", change="improved"
        ),
        RegressionRow(
            case_id="down", baseline_run="base-run", baseline_status="passed", status="failed", change="regressed"
        ),
        RegressionRow(
            case_id="same", baseline_run="base-run", baseline_status="passed", status="passed", change="unchanged"
        ),
    ]
    shown = kind_section(page_of([status("up"), status("down", "failed"), status("same")], run, figures, own=moved))
    assert "Regression against run base-run: 1 improved, 1 regressed, 1 unchanged" in shown
    assert "<td>up</td><td>failed</td><td>passed</td><td>improved</td>" in shown
    assert "<td>down</td><td>passed</td><td>failed</td><td>regressed</td>" in shown and "same" not in shown


def test_pairwise_human_review_and_custom_runs_show_their_own_figures() -> None:
    pairwise = summary(suite_kind="pairwise", cases=2, passed=0, reviewed=2)
    tally = dict(
        variant_a="a@1",
        variant_b="b@2",
        pairwise_calibrated=True,
        wins=3,
        losses=1,
        ties=2,
        win_rate=0.667,
        win_rate_low=0.4,
        win_rate_high=0.9,
        position_consistency=0.75,
    )
    assert "3 wins, 1 losses, 2 ties" in kind_section(page_of([status("p", "reviewed")], pairwise, tally))
    assert "position consistency 0.75" in kind_section(page_of([status("p", "reviewed")], pairwise, tally))
    queue = summary(suite_kind="human-review", cases=2, passed=0, reviewed=2)
    queued = dict(reviewer_role="coach", review_items=4, review_replies=2, review_skipped=0)
    assert "4 items queued for the coach" in kind_section(page_of([status("q", "reviewed")], queue, queued))
    custom = summary(suite_kind="custom", cases=2, passed=1, failed=1)
    handled = dict(
        handler_name="grade:check",
        handler_hash="ab" * 32,
        handler_passed=1,
        handler_failed=1,
        handler_errors=0,
        handler_skipped=0,
    )
    verdicts = [
        CustomRow(
            case_id="good",
            handler_name="grade:check",
            status="passed",
            verdict="pass",
            score=1.0,
            reason="ok",
            error=None,
            duration_ms=3.0,
        ),
        CustomRow(
            case_id="bad",
            handler_name="grade:check",
            status="failed",
            verdict="fail",
            score=0.25,
            reason="too <long>",
            error=None,
            duration_ms=3.0,
        ),
    ]
    shown = kind_section(page_of([status("good"), status("bad", "failed")], custom, handled, own=verdicts))
    assert "Custom handler grade:check" in shown and "1 passed, 1 failed" in shown
    assert "<td>bad</td><td>fail</td><td>0.25</td><td>too &lt;long&gt;</td>" in shown and "good" not in shown
    assert '<section id="kind">' not in page_of([status("a")])  # a conversation suite has no figure of its own


def points(html: str) -> list[float]:
    """Each chart point's height: smaller is a higher pass rate."""
    return [float(y) for y in re.findall(r'<circle class="point[^"]*" cx="[^"]+" cy="([^"]+)"', html)]


def test_the_pass_rate_counts_passed_and_judged_pass_over_all_cases_so_judged_fails_never_raise_it() -> None:
    before = summary(cases=4, passed=3, reviewed=1)
    judged = summary(
        cases=4, passed=1, judged_fail=2, judged_pass=0, reviewed=1, judge="openai:j"
    )  # the judge found two failures
    grown = summary(cases=6, passed=3, judged_fail=2, reviewed=1, judge="openai:j")  # two more cases, both judged-fail
    assert (pass_rate(before), pass_rate(judged), pass_rate(grown)) == (0.75, 0.25, 0.5)
    html = page_of([status("a")], grown, history=[("r1", before), ("r2", judged), ("r3", grown)])
    high, low, grown_y = points(html)
    assert high < grown_y < low  # higher on the chart is a higher rate
    assert "75% (3 of 4 cases passed or judged-pass)" in html and "50% (3 of 6 cases passed or judged-pass)" in html


def test_the_chart_says_what_its_rate_is_of_and_labels_values_and_dates() -> None:
    runs = [(f"run-{n:02d}", summary(started_at=f"2026-11-{n:02d}T02:00:00+00:00")) for n in range(1, 31)]
    svg = re.search(r'<svg id="pass-rate".*?</svg>', page_of([status("a")], runs[-1][1], history=runs)).group(0)
    assert "pass rate = (passed + judged-pass) / all cases" in svg
    assert [v for v in re.findall(r'<text class="value"[^>]*>([^<]+)</text>', svg)] == [
        "0%",
        "25%",
        "50%",
        "75%",
        "100%",
    ]
    dates = re.findall(r'<text class="date"[^>]*>([^<]+)</text>', svg)
    assert dates[0] == "2026-11-01 02:00" and dates[-1] == "2026-11-30 02:00" and len(dates) == 5
    assert len(points(svg)) == 30

"""What the Dagster UI shows of a run: the verdict report on `statuses` (the contact's side above each reply), the
run's result tags, narrow tables, and each suite's figures under its own keys."""

from __future__ import annotations

import re
from pathlib import Path

import dagster as dg

from kindgi_eval.defs.runs import open_instance
from kindgi_eval.defs.ui_metadata import history_metadata, result_tags
from kindgi_eval.kinds import KindResult
from kindgi_eval.reports.verdict_markdown import escape_md, verdicts_markdown
from kindgi_eval.store import CalibrationRow, CriterionRow, StatusRow
from kindgi_eval_tests.defs.test_judged_runs import PRICE, Judge, calibration_lines, case, judged_run, write_suite
from kindgi_eval_tests.reports.test_html_report import status, summary


def test_the_statuses_report_shows_each_split_sample_the_reply_and_the_quote(
    home, provider_env, tmp_path: Path
) -> None:
    provider_env(Judge())
    history = [{"role": "user", "text": "hello there"}, {"role": "agent", "text": "Hi! What would you like to learn?"}]
    folder = write_suite(
        tmp_path / "night",
        [
            case("review-split", "criterion-split", history=history),
            case("asserted-fail", text="probe <i>" + PRICE, must_contain=["NOT IN ANY REPLY <b>"]),
            case("nudged-fail", text="never shown", nudge=True, must_contain=["NOT IN ANY REPLY"]),
            case("plain"),
        ],
        calibration_lines(),
    )
    result = judged_run(home, folder)
    instance = open_instance(home.root)
    (record,) = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=dg.AssetKey("statuses"), asset_partitions=["demo-academy.night"]), limit=1
    ).records
    report = record.asset_materialization.metadata["verdicts_report"].value
    split = result.statuses["review-split"].criteria[0]
    assert "### review\\-split: fail, split 2-1 (judged-fail)" in report
    # every sample is there, the dissenting pass too, with its reason
    reasons = [s.reason for s in result.samples if s.subject_id == "review-split" and s.source == "review"]
    assert sorted(reasons) == ["scripted", "split failure", "split failure"]
    assert report.count("| pass | scripted |") == 1 and report.count("| fail | split failure |") == 2
    # the reply as the contact saw it, with the quote in bold, and the turns before it
    assert f"**{escape_md(split.evidence)}**" in report
    assert "> _contact:_ hello there" in report and "> _agent:_ Hi\\! What would you like to learn?" in report
    # the contact's message between the turns before it and the reply
    split_part = report[report.index("### review\\-split") :]
    message = f"> **contact's message:** {escape_md(PRICE)}"
    assert split_part.index("> _agent:_ Hi") < split_part.index(message) < split_part.index("> **reply 1:**")
    # the failed cases with their failures and the contact's side, the untrusted text escaped
    assert "## Failed cases (2)" in report and "### asserted\\-fail" in report
    failed = report[report.index("### asserted\\-fail") :]
    assert failed.index(f"> **contact's message:** probe \\<i\\>{escape_md(PRICE)}") < failed.index("> **reply 1:**")
    nudged = report[report.index("### nudged\\-fail") :]
    assert "> **contact's message:** _(follow-up: no contact message)_" in nudged and "never shown" not in report
    assert "<b>" not in report and "\\<b\\>" in report and "<i>" not in report
    tags = instance.get_run_by_id(result.run.replies_from).tags
    assert tags["kindgi/result"] == "failing" and tags["kindgi/suite"] == "demo-academy.night"
    assert tags["kindgi/tenant"] == "demo-academy"


def test_escape_md_leaves_no_markdown_or_html_to_act_on() -> None:
    assert escape_md("**bold** [link](http://x) <img src=x> `code` # h\nline") == (
        "\\*\\*bold\\*\\* \\[link\\]\\(http://x\\) \\<img src=x\\> \\`code\\` \\# h line"
    )


def test_the_night_over_night_table_holds_one_suites_runs_only(home, tmp_path: Path) -> None:
    from kindgi_eval_tests.conftest import GOLDEN, run_cli

    folders = {}
    for name in ("alpha", "beta"):
        folders[name] = tmp_path / name
        folders[name].mkdir()
        (folders[name] / "cases.jsonl").write_bytes((GOLDEN / "cases.jsonl").read_bytes())
    for name in ("alpha", "beta", "alpha"):
        assert run_cli("run", "--mock", "--eval-dir", str(folders[name])).code == 0
    lines = (GOLDEN / "cases.jsonl").read_text().splitlines()
    (folders["alpha"] / "cases.jsonl").write_text("\n".join(lines[1:]) + "\n")  # one case fewer on the third night
    assert run_cli("run", "--mock", "--eval-dir", str(folders["alpha"])).code == 0
    instance = open_instance(home.root)
    (record,) = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=dg.AssetKey("run_summary"), asset_partitions=["demo-academy.alpha"]), limit=1
    ).records
    metadata = record.asset_materialization.metadata
    nights = metadata["nights"].value.records
    assert len(nights) == 3  # alpha's three runs; beta's is not among them
    assert nights[1].data["change"] == "no change"
    passed = [int(re.match(r"(\d+) passed", n.data["statuses"]).group(1)) for n in nights]
    assert (
        passed[1] - passed[2] == 1 and nights[2].data["change"] == "suite content changed; passed -1"
    )  # the suite changed, not only the agent
    assert metadata["demo-academy.alpha/passed"].value == passed[2]
    assert "demo-academy.beta/passed" not in metadata and "passed" not in metadata  # no figure mixes suites


def test_the_night_over_night_table_reads_the_store_the_runs_write(home, tmp_path: Path) -> None:
    # a launchpad run whose IO manager is configured with another home than $KINDGI_HOME: earlier runs are read from
    # the store the run writes, never from one the environment names
    from kindgi_eval.inputs import RunSettings
    from kindgi_eval_tests.conftest import GOLDEN
    from kindgi_eval_tests.defs.chain_jobs import execute, in_process_chain

    elsewhere = tmp_path / "configured-home"
    instance = open_instance(home.root)
    settings = RunSettings(eval_dir=str(GOLDEN), agent_model="mock:agent")
    first, second = (execute(in_process_chain, instance, settings, "demo-academy.golden", elsewhere) for _ in range(2))
    assert first.success and second.success
    assert not home.store.exists() and (elsewhere / "store").is_dir()
    (record,) = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=dg.AssetKey("run_summary")), limit=1
    ).records
    assert record.run_id == second.run_id
    nights = record.asset_materialization.metadata["nights"].value.records
    assert [n.data["run"][:8] for n in nights] == [first.run_id[:8], second.run_id[:8]]


def test_a_bold_quote_keeps_the_spaces_around_it() -> None:
    criterion = CriterionRow(
        source="review",
        criterion="polite",
        group="free_text",
        verdict="fail",
        split=False,
        votes=["fail"] * 3,
        evidence="the  quote",
        reason="rude",
    )
    row = StatusRow(
        case_id="c",
        status="judged-fail",
        failures=[],
        messages=["I think the quote\nis here"],
        escalate=False,
        reason=None,
        latency_ms=1.0,
        error=None,
        review=["polite"],
        criteria=[criterion],
    )
    assert "> **reply 1:** I think **the quote** is here" in verdicts_markdown([row], [], [], "run")


def test_the_result_tag_is_failing_needs_review_or_passed() -> None:
    def result(*outcomes: str) -> str:
        return result_tags([status(f"c{n}", o) for n, o in enumerate(outcomes)], "t", "t.s")["kindgi/result"]

    assert result("passed", "judged-fail", "reviewed") == "failing" and result("failed") == "failing"
    assert (
        result("reviewed") == "needs-review" and result("passed", "reviewed") == "needs-review"
    )  # a review-only run is no pass
    assert result("passed", "judged-pass") == "passed"


def test_a_suites_figures_are_plotted_under_its_own_keys_and_its_kind_line_is_shown() -> None:
    run = summary(suite_kind="accuracy", cases=3, passed=2, failed=1)
    figures = dict(accuracy=2 / 3, accuracy_low=0.208, accuracy_high=0.939, correct=2, wrong=1, ungraded_items=0)
    agreement = CalibrationRow(
        group="accuracy",
        items=2,
        pass_labels=1,
        fail_labels=1,
        agreement=1.0,
        agreement_low=0.34,
        kappa=1.0,
        samples=6,
        invalid_samples=0,
        calibrated=True,
        note="ok",
        judge="openai:j",
    )
    metadata = history_metadata([("r0", summary(), []), ("r1", run, [agreement])], "t.facts", KindResult(run, figures))
    assert metadata["t.facts/pass_rate"] == round(2 / 3, 4) and metadata["t.facts/failed"] == 1
    assert metadata["t.facts/agreement/accuracy"] == 1.0
    assert not [k for k in metadata if isinstance(metadata[k], (int, float)) and not k.startswith("t.facts/")]
    assert metadata["kind_result"].value.startswith("Accuracy: 0.667, 2 of 3 graded items correct (95% Wilson interval")
    nights = [r.data for r in metadata["nights"].value.records]
    assert nights[1] == {
        "run": "r1, 2026-11-02 02:00",
        "pass_rate": "67%",
        "statuses": "2 passed, 1 failed",
        "change": "passed -2, failed +1",
    }
    assert "kind_result" not in history_metadata(
        [("r0", summary(), [])], "t.x", KindResult(summary(), {})
    )  # a conversation suite has no kind line

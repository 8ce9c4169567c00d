"""What the Dagster UI shows of a judged run: the verdict report on `statuses`, and the run's result tags."""

from __future__ import annotations

from pathlib import Path

import dagster as dg

from kindgi_eval.defs.runs import open_instance
from kindgi_eval.reports.verdict_markdown import escape_md
from kindgi_eval_tests.defs.test_judged_runs import PRICE, Judge, calibration_lines, case, judged_run, write_suite


def test_the_statuses_report_shows_each_split_sample_the_reply_and_the_quote(home, provider_env, tmp_path: Path) -> None:
    provider_env(Judge())
    history = [{"role": "user", "text": "hello there"}, {"role": "agent", "text": "Hi! What would you like to learn?"}]
    folder = write_suite(
        tmp_path / "night",
        [
            case("review-split", "criterion-split", history=history),
            case("asserted-fail", text="probe " + PRICE, must_contain=["NOT IN ANY REPLY <b>"]),
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
    assert "> _user:_ hello there" in report and "> _agent:_ Hi\\! What would you like to learn?" in report
    # the failed case with its failure, its untrusted text escaped
    assert "## Failed cases (1)" in report and "### asserted\\-fail" in report
    assert "<b>" not in report and "\\<b\\>" in report
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
    expected_passed = nights[1].data["passed"] - nights[2].data["passed"]
    assert expected_passed == 1 and nights[2].data["change"] == "suite content changed; passed -1"  # the suite changed, not only the agent
    assert metadata["demo-academy.alpha/passed"].value == nights[2].data["passed"]
    assert "demo-academy.beta/passed" not in metadata


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
    (record,) = instance.fetch_materializations(dg.AssetRecordsFilter(asset_key=dg.AssetKey("run_summary")), limit=1).records
    assert record.run_id == second.run_id
    nights = record.asset_materialization.metadata["nights"].value.records
    assert [n.data["run"] for n in nights] == [first.run_id[:8], second.run_id[:8]]

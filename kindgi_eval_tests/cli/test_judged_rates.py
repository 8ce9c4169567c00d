"""Judged rates through the command line: a scripted judge on 127.0.0.1 whose error on the calibration items is known,
and one run's figures as DuckDB, the printed summary, the HTML report and the Dagster UI show them."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from kindgi_eval.reports import escape_md
from kindgi_eval.rules import JudgeError, corrected_rate, labels_to_halve
from kindgi_eval_tests.cli.conftest import sql
from kindgi_eval_tests.conftest import run_cli
from kindgi_eval_tests.defs.test_judged_runs import PRICE, case, verdict, write_suite
from kindgi_eval_tests.fake_provider import Answer, criterion_of, fenced

CONCEDES = "CONCEDES"
"""A case whose contact message holds this is one the scripted judge fails on `implicit_concession`."""


def judge(request: dict[str, Any]) -> Answer:
    """Fails a calibration reply holding BAD and a case whose contact message holds CONCEDES on implicit_concession;
    passes everything else."""
    reply, criterion = fenced(request, "reply"), criterion_of(request)
    if "BAD" in reply:
        return verdict("fail", "BAD", "says BAD")
    if criterion.startswith("implicit_concession") and CONCEDES in fenced(request, "contact message"):
        return verdict("fail", reply[:12], "concedes")
    return verdict("pass")


def item(item_id: str, criterion: str, label: str, reply: str) -> dict:
    return {"id": item_id, "text": "hi", "reply": [reply], "criterion": criterion, "label": label}


def calibration() -> list[dict]:
    """implicit_concession: three fail labels (their replies say BAD) and three pass labels, all agreed with.
    answers_the_question: the judge misses one of its three fail labels (the reply lacks BAD), so its sensitivity is
    2 of 3, its specificity 2 of 2, and it is not calibrated."""
    return [
        *(item(f"ic-fail-{n}", "implicit_concession", "fail", "A BAD reply.") for n in range(3)),
        *(item(f"ic-pass-{n}", "implicit_concession", "pass", "A fine reply.") for n in range(3)),
        *(item(f"aq-fail-{n}", "answers_the_question", "fail", "A BAD reply.") for n in range(2)),
        item("aq-fail-missed", "answers_the_question", "fail", "A reply the judge passes."),
        *(item(f"aq-pass-{n}", "answers_the_question", "pass", "A fine reply.") for n in range(2)),
    ]


@pytest.fixture
def judged(home, provider_env, tmp_path: Path):
    """One run of ten cases, three of which the judge fails on implicit_concession, judged by the scripted judge; its
    printed output and its `--json` summary."""
    provider_env(judge)
    cases = [case(f"case-{n}", text=PRICE + (f" {CONCEDES}" if n < 3 else "")) for n in range(10)]
    folder = write_suite(tmp_path / "s", cases, calibration())
    out = tmp_path / "summary.json"
    done = run_cli(
        "run",
        "--eval-dir",
        str(folder),
        "--agent-model",
        "mock:agent",
        "--judge-model",
        "openai:fake-judge",
        "--json",
        str(out),
    )
    assert done.code == 1, done.err  # three judged-fail cases
    run_id = re.search(r"run (\S+) stored under", done.err).group(1)  # type: ignore[union-attr]
    return done.out, json.loads(out.read_text()), run_id


def test_a_judged_run_measures_the_judge_and_corrects_its_rates(judged) -> None:
    out, summary, _ = judged
    assert "Summary: 7 passed, 0 failed, 3 judged-fail, 0 judged-pass, 0 reviewed; 10 criteria ungraded" in out
    groups = summary["calibration"]
    # the judge's measured error, with its counts
    concession, question = groups["implicit_concession"], groups["answers_the_question"]
    assert (concession["sensitivity"], concession["caught"], concession["fails_graded"]) == (1.0, 3, 3)
    assert (concession["specificity"], concession["cleared"], concession["passes_graded"]) == (1.0, 3, 3)
    assert (question["sensitivity"], question["caught"], question["fails_graded"]) == (2 / 3, 2, 3)
    assert (question["specificity"], question["cleared"], question["passes_graded"]) == (1.0, 2, 2)
    assert not question["calibrated"]
    # implicit_concession: 3 of 10 failed by a judge that agreed with every label: corrected, the rate stays 0.30
    expected = corrected_rate(3, 10, JudgeError(3, 3, 3, 3))
    rate = concession["judged_fail_rate"]
    assert (rate["failed"], rate["graded"], rate["observed"], rate["corrected"]) == (3, 10, 0.3, 0.3)
    assert (rate["low"], rate["high"], rate["method"]) == (expected.low, expected.high, "rogan-gladen, fieller 95%")
    assert concession["labels_to_halve"] == labels_to_halve(3, 10, JudgeError(3, 3, 3, 3)).note  # type: ignore[union-attr]
    # the group the judge did not earn graded nothing: no rate, no number
    assert question["judged_fail_rate"]["corrected"] is None and question["judged_fail_rate"]["graded"] == 0
    assert question["labels_to_halve"] is None
    # the pass rate: every case rests on the judge's implicit_concession verdict, 7 of 10 passed
    passes = summary["pass_rate"]
    assert (passes["passed"], passes["cases"], passes["corrected"]) == (7, 10, pytest.approx(0.7))
    assert (passes["low"], passes["high"]) == (pytest.approx(1 - expected.high), pytest.approx(1 - expected.low))
    # the printed summary: the judge's error in the calibration lines, one line per group of rates
    assert "The judge's sensitivity 0.67 (2 of 3 fail labels), specificity 1.00 (2 of 2 pass labels)." in out
    assert (
        f"  implicit_concession: 3 of 10 graded replies failed (0.30); corrected 0.30 (95% interval "
        f"{expected.low:.2f} to {expected.high:.2f})"
    ) in out.splitlines()
    assert "  answers_the_question: nothing graded" in out.splitlines()


def test_duckdb_the_summary_the_html_report_and_the_ui_agree_on_one_run(judged, home, tmp_path: Path) -> None:
    import dagster as dg

    from kindgi_eval.defs import open_instance

    out, _, run_id = judged
    lines = out.splitlines()
    # DuckDB
    rates = {
        r["calibration_group"]: r
        for r in sql(
            "SELECT calibration_group, value, low, high, count, out_of FROM run_metrics "
            f"WHERE run_id = '{run_id}' AND name = 'judged_fail_rate_corrected' AND criterion IS NULL"
        )
    }
    (passes,) = sql(
        f"SELECT value, low, high FROM run_metrics WHERE run_id = '{run_id}' AND name = 'pass_rate_corrected'"
    )
    judge_error = {
        r["group"]: r
        for r in sql(f"SELECT \"group\", sensitivity, specificity FROM calibration WHERE run_id = '{run_id}'")
    }
    graded = {g: r for g, r in rates.items() if r["value"] is not None}
    assert set(graded) == {"implicit_concession"} and set(rates) == set(judge_error)
    # the HTML report
    page = tmp_path / "report.html"
    assert run_cli("report", run_id, "--html", str(page)).code == 0
    html = page.read_text()
    # the Dagster UI
    instance = open_instance(home.root)
    try:
        metadata = {}
        for asset in ("statuses", "calibration"):
            (record,) = instance.fetch_materializations(dg.AssetKey(asset), limit=1).records
            assert record.run_id == run_id
            metadata |= {k: v.value for k, v in record.asset_materialization.metadata.items()}
    finally:
        instance.dispose()
    for group, r in graded.items():
        said = f"corrected {r['value']:.2f} (95% interval {r['low']:.2f} to {r['high']:.2f})"
        assert (
            f"  {group}: {r['count']} of {r['out_of']} graded replies failed ({r['count'] / r['out_of']:.2f}); {said}"
            in lines
        )
        row = re.search(rf'<tr data-group="{group}">(.*?)</tr>', html).group(1)  # type: ignore[union-attr]
        assert f"<td>{r['count']} of {r['out_of']}</td>" in row and f"<td>{said.removeprefix('corrected ')}</td>" in row
        ui = {
            part: metadata[f"judged_fail_rate_corrected/{group}{suffix}"]
            for part, suffix in (("value", ""), ("low", "/low"), ("high", "/high"))
        }
        assert ui == {part: r[part] for part in ("value", "low", "high")}
        assert escape_md(said) in metadata["judged_rates"]  # the UI's report, in markdown
    for group in set(rates) - set(graded):  # nothing graded: no number anywhere
        assert f"judged_fail_rate_corrected/{group}" not in metadata
        assert f"  {group}: nothing graded" in lines
    for group, r in judge_error.items():
        for part in ("sensitivity", "specificity"):  # a group without labels has none, and shows no number
            assert metadata.get(f"{part}/{group}") == r[part]
        if r["sensitivity"] is None:
            continue
        said = f"sensitivity {r['sensitivity']:.2f}"
        assert any(line.startswith(f"  {group}: agreement") and said in line for line in lines)
        assert f"<td>{r['sensitivity']:.2f} (" in re.search(rf"<tr><td>{group}</td>(.*?)</tr>", html).group(1)  # type: ignore[union-attr]
    pass_said = f"corrected {passes['value']:.2f} (95% interval {passes['low']:.2f} to {passes['high']:.2f})"
    assert any(line.startswith("Pass rate: ") and line.endswith(pass_said) for line in lines)
    assert pass_said in html
    assert (
        metadata["pass_rate_corrected"],
        metadata["pass_rate_corrected/low"],
        metadata["pass_rate_corrected/high"],
    ) == (passes["value"], passes["low"], passes["high"])

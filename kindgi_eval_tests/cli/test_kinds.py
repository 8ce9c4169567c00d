"""Accuracy, regression and benchmark suites end to end: published over real HTTP, run by `kindgi-eval run --suite`
as a real process, and queried with `kindgi-eval sql`."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from kindgi_eval.rules import wilson
from kindgi_eval_tests.cli.conftest import kind_figures, publish, sql
from kindgi_eval_tests.conftest import files_under, run_cli
from kindgi_eval_tests.registry.conftest import golden_spec


def run(suite: str, tmp_path: Path) -> tuple[int, dict | None, str]:
    out = tmp_path / f"{suite.replace('@', '-')}.json"
    done = run_cli("run", "--mock", "--suite", suite, "--json", str(out))
    return done.code, json.loads(out.read_text()) if out.exists() else None, done.out + done.err


def test_an_accuracy_suite_reports_its_accuracy_with_a_wilson_interval(registry, home, tmp_path) -> None:
    spec = {
        "cases": [
            {"input": "how much is the foundation course?", "expectedOutput": "$450"},
            {
                "id": "days",
                "input": {"text": "when does it run?", "history": [{"role": "user", "text": "hi"}]},
                "expectedOutput": "Tuesdays",
            },
            {"id": "discount", "input": "can I get a discount?", "expectedOutput": "20% off"},
        ],
        "grader": {"adapterId": "contains"},
    }
    publish(registry.http, "demo-academy.facts", "accuracy", spec)
    code, summary, said = run("demo-academy.facts", tmp_path)
    assert code == 1, said  # a wrong item is a failed case
    interval = wilson(2, 3)
    assert summary["accuracy"] == {
        "value": pytest.approx(2 / 3),
        "correct": 2,
        "wrong": 1,
        "ungraded": 0,
        "interval": {
            "low": pytest.approx(interval.low),
            "high": pytest.approx(interval.high),
            "method": "wilson",
            "level": 0.95,
        },
    }
    assert "Accuracy: 0.667, 2 of 3 graded items correct (95% Wilson interval 0.208 to 0.939); 0 ungraded" in said
    # the wrong item says why under its head, above the question it was asked; a correct one adds nothing
    assert "[failed] discount\n  wrong (contains): " in said and "\n  contact: can I get a discount?\n" in said
    assert said.count("(contains): ") == 1
    grades = sql("SELECT case_id, grader, grade FROM accuracy ORDER BY case_id")
    assert grades == [
        {"case_id": "days", "grader": "contains", "grade": "correct"},
        {"case_id": "discount", "grader": "contains", "grade": "wrong"},
        {"case_id": "item-1", "grader": "contains", "grade": "correct"},
    ]
    (row,) = sql(
        "SELECT suite_kind, accuracy, accuracy_low, accuracy_high, correct, wrong, ungraded_items FROM accuracy_runs"
    )
    assert row == {
        "suite_kind": "accuracy",
        "accuracy": pytest.approx(2 / 3),
        "accuracy_low": pytest.approx(interval.low),
        "accuracy_high": pytest.approx(interval.high),
        "correct": 2,
        "wrong": 1,
        "ungraded_items": 0,
    }
    # the asset's metadata (plotted night over night in the UI) holds the very figures of the runs view
    metadata, row = kind_figures(
        home,
        "accuracy",
        summary["run_id"],
        ("correct", "wrong", "ungraded_items", "accuracy", "accuracy_low", "accuracy_high"),
        "accuracy_runs",
    )
    assert metadata == row


def test_a_regression_suite_compares_each_case_with_its_baseline_and_fails_on_a_regression(
    registry, home, tmp_path
) -> None:
    cases = golden_spec()["cases"][:6]
    publish(registry.http, "demo-academy.base", "conversation", {"cases": cases})
    code, base, said = run("demo-academy.base", tmp_path)
    assert code == 0 and base["counts"]["passed"] == 6, said
    broken = [dict(cases[0], must_contain=["a phrase the demo agent never says"]), *cases[1:]]
    publish(
        registry.http,
        "demo-academy.checked",
        "regression",
        {"baseline": {"suiteId": "demo-academy.base", "version": "1.0.0"}, "cases": broken},
    )
    code, summary, said = run("demo-academy.checked", tmp_path)
    assert code == 1, said
    regression = summary["regression"]
    assert (regression["baseline_run"], regression["improved"], regression["regressed"], regression["unchanged"]) == (
        base["run_id"],
        0,
        1,
        5,
    )
    assert regression["pass_rate_change"] == pytest.approx(-1 / 6) and regression["mcnemar_p"] == 1.0
    assert regression["interval"]["low"] <= -1 / 6 <= regression["interval"]["high"] <= 0
    assert f"Regression against run {base['run_id']}: 0 improved, 1 regressed, 5 unchanged" in said
    # the case that moved says so under its own head in the printed report; the unchanged ones say nothing
    lines = said.splitlines()
    head = next(n for n, line in enumerate(lines) if line.startswith(f"[failed] {cases[0]['id']}"))
    assert lines[head + 1] == f"  regressed: passed in baseline run {base['run_id'][:8]}, failed now"
    assert said.count("baseline run ") == 1
    moved = sql("SELECT case_id, baseline_status, status, change FROM regressions WHERE change <> 'unchanged'")
    assert moved == [
        {"case_id": cases[0]["id"], "baseline_status": "passed", "status": "failed", "change": "regressed"}
    ]
    figures = (
        "baseline_run",
        "improved",
        "regressed",
        "unchanged",
        "pass_rate_change",
        "change_low",
        "change_high",
        "mcnemar_p",
    )
    metadata, row = kind_figures(home, "regressions", summary["run_id"], figures, "regression_runs")
    assert metadata == row and metadata["regressed"] == 1
    # the same cases against the baseline named by its run: nothing moved, the run passes
    publish(registry.http, "demo-academy.same", "regression", {"baseline": {"runId": base["run_id"]}, "cases": cases})
    code, summary, said = run("demo-academy.same", tmp_path)
    assert code == 0, said
    assert (summary["regression"]["unchanged"], summary["regression"]["pass_rate_change"]) == (6, 0.0)


@pytest.mark.parametrize(
    ("baseline", "cases", "said"),
    [
        (
            {"runId": "0a1b2c3d-0000-4000-8000-000000000000"},
            6,
            "field spec.baseline.runId: no run '0a1b2c3d-0000-4000-8000-000000000000' of tenant 'demo-academy'",
        ),
        (
            {"suiteId": "demo-academy.base", "version": "2.0.0"},
            6,
            "no run of suite demo-academy.base version 2.0.0 of tenant 'demo-academy'",
        ),
        (
            {"suiteId": "demo-academy.base", "version": "1.0.0"},
            5,
            "which the suite does not have; a baseline must have evaluated the same cases",
        ),
    ],
    ids=["run-missing", "version-never-run", "other-cases"],
)
def test_a_baseline_that_is_missing_or_evaluated_other_cases_is_an_input_error(
    registry, home, tmp_path, baseline, cases, said
) -> None:
    golden = golden_spec()["cases"][:6]
    publish(registry.http, "demo-academy.base", "conversation", {"cases": golden})
    code, _, output = run("demo-academy.base", tmp_path)
    assert code == 0, output
    publish(registry.http, "demo-academy.checked", "regression", {"baseline": baseline, "cases": golden[:cases]})
    stored = files_under(home.store)
    code, summary, output = run("demo-academy.checked", tmp_path)
    assert code == 2 and summary is None and said in output and "Traceback" not in output
    assert files_under(home.store) == stored  # nothing run, nothing written


def test_the_baseline_is_resolved_once_as_a_run_starts_and_a_resumed_run_keeps_it(registry, home, tmp_path) -> None:
    from kindgi_eval.defs import open_instance, resume_chain, run_chain
    from kindgi_eval.defs.resources import pinned_settings

    golden = golden_spec()["cases"][:3]
    publish(registry.http, "demo-academy.base", "conversation", {"cases": golden})
    _, first, _ = run("demo-academy.base", tmp_path)
    publish(
        registry.http,
        "demo-academy.checked",
        "regression",
        {"baseline": {"suiteId": "demo-academy.base", "version": "1.0.0"}, "cases": golden},
    )
    code, checked, said = run("demo-academy.checked", tmp_path)
    assert code == 0 and checked["regression"]["baseline_run"] == first["run_id"], said
    _, second, _ = run("demo-academy.base", tmp_path)  # now the latest run of the baseline suite
    instance = open_instance(home.root)
    try:
        started = instance.get_run_by_id(checked["run_id"])
        assert (
            started.tags["kindgi/baseline_run"] == first["run_id"]
        )  # the command line's resolution, pinned to the run
        settings, key = pinned_settings(started.tags), started.tags["dagster/partition"]
        resumed = resume_chain(instance, home.root, settings, key, "regression", checked["run_id"], None)
        fresh = run_chain(
            instance, home.root, settings, key, "regression"
        )  # a run with nothing pinned resolves, and records, the latest
        assert instance.get_run_by_id(fresh).tags["kindgi/baseline_run"] == second["run_id"]
    finally:
        instance.dispose()
    compared = sql("SELECT DISTINCT run_id, baseline_run FROM regressions")
    assert {r["run_id"]: r["baseline_run"] for r in compared} == {
        checked["run_id"]: first["run_id"],
        resumed: first["run_id"],
        fresh: second["run_id"],
    }


def test_another_tenants_run_is_never_a_baseline(registry, home, tmp_path) -> None:
    golden = golden_spec()["cases"][:3]
    publish(registry.http, "demo-academy.base", "conversation", {"cases": golden})
    _, base, _ = run("demo-academy.base", tmp_path)
    publish(
        registry.other,
        "globex.peek",
        "regression",
        {"baseline": {"runId": base["run_id"]}, "cases": golden},
        tenant="globex",
    )
    done = run_cli("run", "--mock", "--suite", "globex.peek", "--config-dir", str(_tenant_named(tmp_path, "globex")))
    assert done.code == 2 and f"no run '{base['run_id']}' of tenant 'globex'" in done.err


def test_a_benchmark_suite_runs_the_catalogue_entry_and_records_it(registry, home, tmp_path) -> None:
    publish(
        registry.http,
        "demo-academy.standard",
        "benchmark",
        {"benchmark": {"name": "kindgi/golden", "version": "1.0.0"}},
    )
    code, summary, said = run("demo-academy.standard", tmp_path)
    assert code == 0, said
    pinned = "779e99baa7ad1c8d68d3f086eefc3af82bc21876ad7f27da72bd459cbae09d6f"
    assert summary["benchmark"] == {"name": "kindgi/golden", "version": "1.0.0", "hash": pinned}
    assert summary["counts"]["passed"] == 32 and summary["counts"]["reviewed"] == 4
    assert f"Benchmark: kindgi/golden 1.0.0 (content sha256 {pinned})" in said
    (row,) = sql(
        "SELECT suite_id, suite_kind, benchmark_name, benchmark_version, benchmark_hash, cases FROM benchmark_runs"
    )
    assert row == {
        "suite_id": "demo-academy.standard",
        "suite_kind": "benchmark",
        "benchmark_name": "kindgi/golden",
        "benchmark_version": "1.0.0",
        "benchmark_hash": pinned,
        "cases": 36,
    }


def _tenant_named(tmp_path: Path, tenant: str) -> Path:
    """The demo tenant's configuration under another tenant's name."""
    from kindgi_eval.inputs.tenant_file import DEMO_CONFIG_DIR

    folder = tmp_path / tenant
    folder.mkdir()
    text = (DEMO_CONFIG_DIR / "tenant.toml").read_text()
    (folder / "tenant.toml").write_text(text.replace('tenant = "demo-academy"', f'tenant = "{tenant}"'))
    return folder


def test_a_baseline_given_as_a_run_id_prefix_is_refused_at_publish_before_anything_is_sent(home, tmp_path) -> None:
    document = {
        "id": "demo-academy.held",
        "tenantId": "demo-academy",
        "version": "1.0.0",
        "kind": "regression",
        "spec": {"baseline": {"runId": "f83da2bb"}, "cases": golden_spec()["cases"][:2]},
    }
    (tmp_path / "suite.json").write_text(json.dumps(document))
    nowhere = {"KINDGI_REGISTRY_URL": "http://127.0.0.1:9", "KINDGI_REGISTRY_TOKEN": "unused"}  # never asked
    done = run_cli("suites", "publish", str(tmp_path / "suite.json"), env=nowhere)
    assert (done.code, done.out) == (2, "")
    assert done.err == (
        f"error: {tmp_path / 'suite.json'}: spec: not a regression suite kindgi-eval run can run (1 problem): "
        "spec.baseline.runId: 'f83da2bb' is not a whole run id. A version names its baseline for good, and a "
        "prefix that names one run now may name another, or several, later: give the whole id, as "
        '`kindgi-eval runs` lists it, or name the baseline by {"suiteId", "version"}.\n'
    )


def test_a_publish_with_config_dir_is_checked_against_that_tenant_before_anything_is_sent(home, tmp_path) -> None:
    starter = Path(__file__).parents[2] / "kindgi_eval" / "kinds" / "conversation" / "starter"
    folder = tmp_path / "mine"
    shutil.copytree(starter, folder)
    lines = (folder / "cases.jsonl").read_text().splitlines()
    lines[1] = lines[1].replace('"course":"beginners"', '"course":"pilates"')
    (folder / "cases.jsonl").write_text("\n".join(lines) + "\n")
    nowhere = {"KINDGI_REGISTRY_URL": "http://127.0.0.1:9", "KINDGI_REGISTRY_TOKEN": "unused"}  # never reached
    publish = ("suites", "publish", str(folder), "--id", "my-studio.starter", "--version", "1.0.0")
    refused = run_cli(*publish, "--config-dir", str(folder), env=nowhere)
    assert (refused.code, refused.out) == (2, "")
    assert refused.err == (
        f"error: {folder}/cases.jsonl:2: field contact.course: 'pilates' is not a course of the tenant "
        f"configuration {folder} (courses: beginners, vinyasa).\n"
    )
    demo = run_cli(
        *publish, "--config-dir", str(Path(__file__).parents[2] / "kindgi_eval" / "demo_tenant"), env=nowhere
    )
    assert (
        demo.code == 2
        and "is tenant 'demo-academy''s configuration, and the suite is tenant 'my-studio''s." in demo.err
    )
    # a document's conversation cases, named by id@version and their path in the spec
    document = json.loads(
        (Path(__file__).parents[2] / "kindgi_eval" / "kinds" / "regression" / "starter" / "suite.json").read_text()
    )
    document["spec"]["cases"][1]["contact"]["course"] = "pilates"
    (tmp_path / "suite.json").write_text(json.dumps(document))
    spec = run_cli("suites", "publish", str(tmp_path / "suite.json"), "--config-dir", str(starter), env=nowhere)
    assert spec.code == 2
    assert spec.err.startswith(
        "error: my-studio.regressions@0.1.0: spec: field cases[1].contact.course: 'pilates' is not a course"
    )
    unchanged = run_cli(
        "suites",
        "publish",
        str(starter),
        "--id",
        "my-studio.starter",
        "--version",
        "1.0.0",
        "--config-dir",
        str(starter),
        env=nowhere,
    )
    assert unchanged.code == 1 and "127.0.0.1:9" in unchanged.err  # checked and passed: only the registry is missing

"""Run history: replay over stored replies, run-to-run diffs, the exported database, and retention."""

from __future__ import annotations

import json
import shutil
from datetime import date
from pathlib import Path

import duckdb
import pytest

from kindgi_eval.store.layout import find_table, month_path, run_keys
from kindgi_eval.store.prune import StoredRunRef, plan_prune
from kindgi_eval_tests.conftest import GOLDEN, files_under, run_cli

KEY = "demo-academy.golden"


def run_id_of(result) -> str:
    """The run id `run`/`replay` reports on standard error."""
    line = next(line for line in result.err.splitlines() if line.startswith("run "))
    return line.split()[1]


def sql_json(query: str) -> list[dict]:
    result = run_cli("sql", query, "--format", "json")
    assert result.code == 0, result.err
    return json.loads(result.out)


def test_replay_rejudges_stored_replies_without_the_agent(home) -> None:
    first = run_cli("run", "--mock")
    assert first.code == 0, first.err
    source = run_id_of(first)
    before = {p: p.read_bytes() for p in files_under(home.store) if "kindgi.duckdb" not in p.name}
    replayed = run_cli("replay", "--from", source[:8], "--judge-model", "mock:judge")  # a unique prefix, as diff takes
    assert replayed.code == 0, replayed.err
    new = run_id_of(replayed)
    assert new != source
    # the source run is untouched: every file it had is byte for byte the same
    assert all(p.read_bytes() == content for p, content in before.items())
    # zero agent calls: the replay wrote no replies, suite or outcomes of its own
    for asset in ("suite", "agent_replies", "outcomes"):
        assert find_table(home.store, asset, KEY, new) is None
    (row,) = sql_json(f"SELECT run_id, replies_from, judge, judge_prompt_hash FROM runs WHERE run_id = '{new}'")
    assert row["replies_from"] == source and row["judge"] == "mock:judge" and len(row["judge_prompt_hash"]) == 64
    # statuses follow the new judge: calibration now exists for the replay and refuses mock:judge
    groups = sql_json(f"SELECT \"group\", calibrated FROM calibration WHERE run_id = '{new}'")
    assert len(groups) == 4 and not any(g["calibrated"] for g in groups)
    assert "criteria ungraded" in replayed.out


def test_replay_of_an_unknown_or_pruned_run_is_a_clear_error(home) -> None:
    result = run_cli("replay", "--from", "no-such-run", "--judge-model", "mock:judge")
    assert result.code == 2
    assert result.err.startswith("error: --from: no run 'no-such-run' in the store")
    source = run_id_of(run_cli("run", "--mock"))
    shutil.rmtree(find_table(home.store, "agent_replies", KEY, source).parent)
    result = run_cli("replay", "--from", source, "--judge-model", "mock:judge")
    assert result.code == 2
    assert f"run {source} has no stored agent_replies (pruned?)" in result.err


def test_sql_answers_only_from_the_store_and_names_its_views(home) -> None:
    assert run_cli("run", "--mock").code == 0
    # `run` is no view; without replacement scans DuckDB never reaches for a Python object of that name
    result = run_cli("sql", "SELECT * FROM run")
    assert result.code == 2 and "Python" not in result.err
    assert (
        "The views are: cases, replies, turns, outcomes, judge_samples, calibration, statuses, accuracy, custom, pairwise, "
        "regressions, review_queue, run_metrics, runs, reviews, accuracy_runs, benchmark_runs, custom_runs, human_review_runs, "
        "pairwise_runs, regression_runs."
    ) in result.err


def test_sql_help_names_every_view() -> None:
    from kindgi_eval.kinds import store_views
    from kindgi_eval.store import view_names

    text = " ".join(run_cli("sql", "--help").out.split())
    assert all(f" {name}," in text or f" {name}." in text for name in view_names(store_views()))


def test_replay_needs_a_judge(home) -> None:
    source = run_id_of(run_cli("run", "--mock"))
    result = run_cli("replay", "--from", source)
    assert result.code == 2 and "a replay needs a judge" in result.err


def test_diff_of_a_run_and_its_replay_reports_same_replies(home) -> None:
    source = run_id_of(run_cli("run", "--mock"))
    new = run_id_of(run_cli("replay", "--from", source, "--judge-model", "mock:judge"))
    result = run_cli("diff", source, new, "--json")
    assert result.code == 0, result.err
    difference = json.loads(result.out)
    assert difference["same_replies"] is True
    assert difference["statuses"] == [] and difference["criteria"] == []  # mock:judge is refused: nothing graded
    assert [g["calibrated_b"] for g in difference["calibration"]] == [False] * 4
    text = run_cli("diff", source, new).out
    assert "Replies: the same, so every change below is the judge's, not the agent's" in text


def test_diff_of_two_agent_runs_reports_changed_cases(home, tmp_path: Path) -> None:
    config = tmp_path / "config"
    config.mkdir()
    demo = (Path(__file__).parents[2] / "kindgi_eval/demo_tenant/tenant.toml").read_text()
    (config / "tenant.toml").write_text(demo.replace('upfront = "$450"', 'upfront = "$475"'))
    before = run_id_of(run_cli("run", "--mock"))
    after_run = run_cli("run", "--mock", "--config-dir", str(config))
    assert after_run.code == 1  # the golden set holds the $450 price
    after = run_id_of(after_run)
    difference = json.loads(run_cli("diff", before, after, "--json").out)
    assert difference["same_replies"] is False
    changed = {c["case_id"]: (c["a"], c["b"]) for c in difference["statuses"]}
    assert changed and all(b == "failed" for _, b in changed.values())
    assert "price-path-upfront" in changed
    assert "Replies: different" in run_cli("diff", before, after).out


def copy_run(store: Path, run_id: str, new_id: str) -> None:
    """Store a copy of a run's files under another run id, as if a second run had written them."""
    for path in store.glob(f"*/*/*/run_id={run_id}"):
        shutil.copytree(path, path.parent / f"run_id={new_id}")


def test_diff_takes_unique_prefixes_and_lists_an_ambiguous_one_and_runs_lists_them_newest_first(home) -> None:
    empty = run_cli("diff", "latest", "latest")
    assert empty.code == 2
    assert (
        empty.err.splitlines()[0]
        == f"error: RUN_A: the store at {home.store} holds no run yet, so `latest` names none. Start one with: kindgi-eval run --mock"
    )
    first = run_id_of(run_cli("run", "--mock"))
    result = run_cli("diff", "--suite", KEY)
    assert result.code == 2
    assert result.err == f"error: --suite: suite '{KEY}' has 1 run in the store at {home.store}; comparing needs two.\n"
    second = run_id_of(run_cli("run", "--mock"))
    result = run_cli("diff", first[:8], second[:8])  # the eight characters the Dagster UI shows
    assert result.code == 0, result.err
    assert result.out.startswith(f"A: {first} (") and f"\nB: {second} (" in result.out
    assert json.loads(run_cli("diff", first[:8], second, "--json").out)["run_b"] == second
    listed = run_cli("runs", "--format", "json")
    assert listed.code == 0, listed.err
    rows = json.loads(listed.out)
    assert [r["run_id"] for r in rows] == [second, first]  # newest first
    assert rows[0] | {"started_at": None} == {
        "run_id": second,
        "suite": KEY,
        "tenant": "demo-academy",
        "started_at": None,
        "state": "succeeded",
        "cases": 39,
        "passed": 34,
        "failed": 0,
        "judged_fail": 0,
        "judged_pass": 0,
        "reviewed": 5,
    }
    assert [r["run_id"] for r in json.loads(run_cli("runs", "--limit", "1", "--format", "json").out)] == [second]
    assert json.loads(run_cli("runs", "--suite", "other.suite", "--format", "json").out) == []
    compared = json.loads(run_cli("diff", first[:8], "latest", "--json").out)  # `latest`: the newest, as runs lists it
    assert (compared["run_a"], compared["run_b"]) == (first, second)
    # a copy of the first run under an id that begins with the same eight characters makes them ambiguous
    twin = first[:8] + "-0000-4000-8000-000000000000"
    copy_run(home.store, first, twin)
    day = next(home.store.glob(f"run_summary/*/*/run_id={first}")).parent.name.removeprefix("date=")
    result = run_cli("diff", first[:8], "no-such-run")
    assert result.code == 2 and result.out == ""
    found = "; ".join(f"{i} ({KEY}, {day})" for i in sorted([first, twin]))
    assert result.err.splitlines() == [
        f"error: RUN_A: '{first[:8]}' begins 2 run ids: {found}. Give more characters of the one you mean.",
        f"error: RUN_B: no run 'no-such-run' in the store at {home.store}. See `kindgi-eval runs` for the stored runs, newest first.",
    ]
    assert run_cli("diff", first, twin).code == 0  # a whole id is never ambiguous


def test_diff_refuses_a_suite_together_with_run_ids_or_half_a_pair(home) -> None:
    both = run_cli("diff", "--suite", KEY, "abc")
    assert both.code == 2 and "Error: give either RUN_A and RUN_B or --suite, not both." in both.err
    half = run_cli("diff", "abc")
    assert half.code == 2 and "Error: give RUN_A and RUN_B (run ids or unique prefixes), or --suite KEY." in half.err
    empty = run_cli("diff", "", "abc")
    assert empty.code == 2
    assert (
        empty.err.splitlines()[0]
        == "error: RUN_A: an empty run id names no run; give a run id or its first characters."
    )


def test_diff_suite_exit_code_when_a_case_got_worse(home, tmp_path: Path) -> None:
    suite = tmp_path / "golden"  # the same folder name, so the same partition demo-academy.golden
    shutil.copytree(GOLDEN, suite)
    first = run_id_of(run_cli("run", "--mock", "--eval-dir", str(suite)))
    second = run_id_of(run_cli("run", "--mock", "--eval-dir", str(suite)))
    # between the runs: a passed case and a reviewed case get a phrase the mock agent never says,
    # and a new case fails from its first run
    never = "a phrase the mock agent never says"
    cases = [json.loads(line) for line in (suite / "cases.jsonl").read_text().splitlines() if line.strip()]
    for case in cases:
        if case["id"] in ("complaint-escalates", "review-warm-first-contact"):
            case["must_contain"] = [*case.get("must_contain", []), never]
    cases.append({"id": "new-and-failing", "text": "hello", "expect": {"escalate": False}, "must_contain": [never]})
    (suite / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    third_run = run_cli("run", "--mock", "--eval-dir", str(suite))
    assert third_run.code == 1, third_run.err
    third = run_id_of(third_run)
    result = run_cli("diff", "--suite", KEY, "--exit-code")
    assert result.code == 1, result.err
    assert result.out.startswith(f"A: {second} (") and f"\nB: {third} (" in result.out  # not the first run
    assert "  complaint-escalates: passed -> failed (worse)\n" in result.out
    assert "  review-warm-first-contact: reviewed -> failed (worse)\n" in result.out
    assert "  new-and-failing: absent -> failed\n" in result.out  # new in B: not worse
    assert run_cli("diff", "--suite", KEY).code == 0  # without --exit-code, a diff that ran is a success
    as_json = run_cli("diff", "--suite", KEY, "--exit-code", "--json")
    assert as_json.code == 1
    assert [c["case_id"] for c in json.loads(as_json.out)["statuses"] if c["worse"]] == [
        "complaint-escalates",
        "review-warm-first-contact",
    ]
    assert run_cli("diff", first[:8], second[:8], "--exit-code").code == 0  # nothing changed
    assert run_cli("diff", third[:8], second[:8], "--exit-code").code == 0  # read backwards: only better


def test_exported_database_opens_in_a_plain_duckdb_client(home) -> None:
    run_id = run_id_of(run_cli("run", "--mock"))
    with duckdb.connect(str(home.store / "kindgi.duckdb"), read_only=True) as con:
        ((count,),) = con.execute(f"SELECT count(*) FROM statuses WHERE run_id = '{run_id}'").fetchall()
        views = {r[0] for r in con.sql("SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall()}
    assert count == sum(
        1
        for name in ("cases.jsonl", "scenarios.jsonl")
        for line in (GOLDEN / name).read_text().splitlines()
        if line.strip()
    )
    assert views == {
        "runs",
        "run_metrics",
        "cases",
        "replies",
        "turns",
        "outcomes",
        "judge_samples",
        "calibration",
        "statuses",
        "accuracy",
        "regressions",
        "pairwise",
        "custom",
        "review_queue",
        "reviews",
        "accuracy_runs",
        "benchmark_runs",
        "custom_runs",
        "human_review_runs",
        "pairwise_runs",
        "regression_runs",
    }


def age_runs(store: Path, run_ids: list[str], day: str) -> None:
    """Move runs' files to another day's folders, as if they had run then."""
    for run_id in run_ids:
        for path in store.glob(f"*/*/*/run_id={run_id}"):
            target = path.parent.parent / f"date={day}" / path.name
            target.parent.mkdir(exist_ok=True)
            path.rename(target)
            if not any(path.parent.iterdir()):
                path.parent.rmdir()


def runs(*specs: tuple[str, str, str]) -> list[StoredRunRef]:
    return [StoredRunRef(*s) for s in specs]


@pytest.mark.parametrize(
    ("stored", "removed", "spared"),
    [
        # an old run goes; a new run stays
        (runs(("old", "2026-01-01", "old"), ("new", "2026-11-29", "new")), ["old"], []),
        # an old run whose replies a kept replay judged is spared
        (runs(("old", "2026-01-01", "old"), ("replay", "2026-11-29", "old")), [], ["old"]),
        # an old replay of an old run: both go
        (runs(("old", "2026-01-01", "old"), ("replay", "2026-01-02", "old")), ["old", "replay"], []),
        # exactly on the cutoff day is kept
        (
            runs(
                ("edge", "2026-10-31", "edge"),
            ),
            [],
            [],
        ),
    ],
)
def test_plan_prune(stored, removed, spared) -> None:
    plan = plan_prune(stored, keep_days=30, today=date(2026, 11, 30))
    assert (plan.removed, plan.spared) == (removed, spared)


def test_views_answer_the_same_for_kept_runs_after_prune(home) -> None:
    old = run_id_of(run_cli("run", "--mock"))
    source = run_id_of(run_cli("run", "--mock"))
    kept = run_id_of(run_cli("run", "--mock"))
    age_runs(home.store, [old, source], "2025-11-01")
    replay = run_id_of(run_cli("replay", "--from", source, "--judge-model", "mock:judge"))
    queries = [
        "SELECT run_id, case_id, status, failures FROM statuses WHERE run_id IN ('{k}', '{r}') ORDER BY ALL",
        "SELECT run_id, replies_from, passed, reviewed FROM runs WHERE run_id IN ('{k}', '{r}') ORDER BY ALL",
        'SELECT run_id, "group", agreement FROM calibration ORDER BY ALL',
    ]
    before = [sql_json(q.format(k=kept, r=replay)) for q in queries]
    result = run_cli("prune", "--keep-days", "30")
    assert result.code == 0, result.err
    assert result.out == "removed 1 runs; kept 1 older runs whose replies a kept replay uses\n"
    assert [sql_json(q.format(k=kept, r=replay)) for q in queries] == before
    remaining = {r["run_id"] for r in sql_json("SELECT run_id FROM runs")}
    assert remaining == {source, kept, replay}
    assert not list(home.store.glob(f"*/*/*/run_id={old}"))
    # the replay of the spared source still works after the prune
    assert run_cli("replay", "--from", source, "--judge-model", "mock:judge").code == 0


ANSWERS = [
    "SELECT run_id, date, case_id, status, failures, criteria FROM statuses ORDER BY ALL",
    "SELECT run_id, date, replies_from, passed, reviewed, judge FROM runs ORDER BY ALL",
    "SELECT run_id, subject_id, criterion, sample, vote FROM judge_samples ORDER BY ALL",
    "SELECT run_id, case_id, assertion, held FROM outcomes ORDER BY ALL",
]


def test_compaction_keeps_every_answer_and_every_run_usable(home) -> None:
    first = run_id_of(run_cli("run", "--mock"))
    second = run_id_of(run_cli("replay", "--from", first, "--judge-model", "mock:judge"))
    recent = run_id_of(run_cli("run", "--mock"))
    age_runs(home.store, [first, second], "2025-10-07")
    before = [sql_json(q) for q in ANSWERS]
    result = run_cli("compact")
    assert result.code == 0, result.err
    assert result.out == "compacted 2 runs of 1 months (2025-10)\n"
    assert [sql_json(q) for q in ANSWERS] == before
    assert month_path(home.store, "statuses", "2025-10").is_file()
    assert not list(home.store.glob(f"*/*/*/run_id={first}")) and list(home.store.glob(f"*/*/*/run_id={recent}"))
    # a compacted run is still a run: it can be replayed and compared
    assert run_cli("replay", "--from", first, "--judge-model", "mock:judge").code == 0
    assert json.loads(run_cli("diff", first[:8], second[:8], "--json").out)["same_replies"] is True
    assert run_cli("compact").out == "compacted 0 runs of 0 months (none)\n"


def test_a_killed_compaction_loses_nothing(home, tmp_path: Path) -> None:
    old = run_id_of(run_cli("run", "--mock"))
    age_runs(home.store, [old], "2025-10-07")
    before = [sql_json(q) for q in ANSWERS]
    saved = tmp_path / "saved"
    shutil.copytree(home.store, saved)
    assert run_cli("compact").code == 0
    # as if killed after writing the month files but before removing the run folders
    for path in saved.glob("*/suite=*"):
        shutil.copytree(path, home.store / path.parent.name / path.name)
    assert [k.run_id for k in run_keys(home.store)] == [old]  # in a month file and its own folder: listed once
    assert run_cli("compact").out == "compacted 1 runs of 1 months (2025-10)\n"
    assert [sql_json(q) for q in ANSWERS] == before


def test_prune_removes_compacted_runs_too(home) -> None:
    old = run_id_of(run_cli("run", "--mock"))
    kept = run_id_of(run_cli("run", "--mock"))
    age_runs(home.store, [old], "2025-10-07")
    run_cli("compact")
    assert run_cli("prune", "--keep-days", "30").out.startswith("removed 1 runs")
    assert {r["run_id"] for r in sql_json("SELECT DISTINCT run_id FROM statuses")} == {kept}
    assert not month_path(home.store, "statuses", "2025-10").exists()


def test_compact_refuses_a_malformed_month(home) -> None:
    result = run_cli("compact", "--before", "2025-13")
    assert result.code == 2 and "is not a month; write YYYY-MM" in result.err

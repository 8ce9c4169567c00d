"""A store written before the kinds' figures moved from `runs` to `run_metrics` still reads: the store of one run per
kind that kindgi-eval wrote at c9653c4 (`old_store_c9653c4.md`) answers every query it answered then, through the
real command line, and each kind's view gives its old runs' figures under the names `runs` gave them."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from kindgi_eval.kinds import count, estimate, store_views, stored_result, stored_tables
from kindgi_eval.reports import format_rows
from kindgi_eval.rules import wilson
from kindgi_eval.store import (
    SHARED,
    MetricRow,
    RunRow,
    SuiteRow,
    compact,
    connect,
    params_json,
    read_rows,
    table_path,
    to_table,
    write_atomically,
)
from kindgi_eval_tests.conftest import run_cli

HERE = Path(__file__).parent
OLD_STORE = HERE / "old_store_c9653c4"
RECORDED = json.loads((HERE / "old_store_c9653c4.json").read_text())
KIND_OF_RUN = re.compile(r"FROM runs WHERE suite_kind = '([a-z-]+)'")


@pytest.fixture
def old_store(home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the old store, as the store of the test's runtime folder."""
    store = tmp_path / "old-store"
    shutil.copytree(OLD_STORE, store)
    monkeypatch.setenv("KINDGI_STORE", str(store))
    return store


def sql(query: str) -> list[dict]:
    done = run_cli("sql", query, "--format", "json")
    assert done.code == 0, done.err
    return json.loads(done.out)


def answers(store: Path, query: str) -> list[dict]:
    """What `kindgi-eval sql QUERY --format json` prints, from the functions it calls, without a process per query."""
    with connect(store, query, store_views()) as con:
        result = con.execute(query)
        columns, rows = [d[0] for d in result.description], result.fetchall()
    return json.loads(format_rows(columns, rows, "json"))


def test_the_old_store_answers_every_query_as_it_did_when_it_was_written(old_store) -> None:
    assert sql(RECORDED[0]["query"]) == RECORDED[0]["rows"]  # the command line itself, once
    for recorded in RECORDED:
        assert answers(old_store, recorded["query"]) == recorded["rows"], recorded["about"]


def test_each_kinds_view_gives_its_old_runs_figures_under_their_old_names(old_store) -> None:
    checked = set()
    for recorded in RECORDED:
        found = KIND_OF_RUN.search(recorded["query"])
        if found is None:
            continue
        kind = found.group(1)
        view = f"{kind.replace('-', '_')}_runs"
        assert answers(old_store, KIND_OF_RUN.sub(f"FROM {view}", recorded["query"])) == recorded["rows"], view
        checked.add(kind)
    assert checked == {"accuracy", "regression", "pairwise", "custom", "human-review", "benchmark"}


def test_a_kinds_view_shows_its_own_runs_only(old_store) -> None:
    assert sql("SELECT suite_kind, count(*) AS n FROM pairwise_runs GROUP BY ALL") == [
        {"suite_kind": "pairwise", "n": 1}
    ]
    (row,) = sql("SELECT * FROM accuracy_runs")
    assert "win_rate" not in row and "params" not in row  # another kind's columns, and the JSON the columns come from


def test_the_html_report_of_an_old_run_shows_its_kinds_figure(old_store, tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    done = run_cli("report", "8fb7d46b", "--html", str(out))
    assert done.code == 0, done.err
    assert "Accuracy: 0.667, 2 of 3 graded items correct" in out.read_text()


def test_an_old_run_and_a_new_run_of_a_kind_read_side_by_side(old_store) -> None:
    # a run stored as today's code stores one, beside the old accuracy run: its figures in run_metrics, its
    # parameters in params; both read through the kind's view, each from where it keeps its figures
    partition, old_run, new_run = "demo-academy@demo-academy.facts", "8fb7d46b-ce74-421c-9524-994230169bf0", "new-run"
    (old,) = read_rows(old_store, SHARED.run_summary, partition, old_run)  # today's columns of it
    interval = wilson(4, 5)
    figures = [
        estimate("accuracy", interval, "wilson 95%"),
        count("correct", 4),
        count("wrong", 1),
        count("ungraded_items", 0),
    ]
    for asset, rows, model in (
        ("run_summary", [old.model_copy(update={"params": "{}"})], RunRow),
        ("run_metrics", figures, MetricRow),
    ):
        write_atomically(to_table(rows, model), table_path(old_store, asset, partition, "2026-12-03", new_run))
    rows = answers(
        old_store, "SELECT run_id, accuracy, accuracy_low, correct, wrong FROM accuracy_runs ORDER BY run_id"
    )
    assert rows == [
        {
            "run_id": old_run,
            "accuracy": pytest.approx(2 / 3),
            "accuracy_low": pytest.approx(wilson(2, 3).low),
            "correct": 2,
            "wrong": 1,
        },
        {
            "run_id": new_run,
            "accuracy": pytest.approx(0.8),
            "accuracy_low": pytest.approx(interval.low),
            "correct": 4,
            "wrong": 1,
        },
    ]
    # `runs` keeps the common columns: a new run has no figure of its own there, an old run keeps its stored one
    assert answers(old_store, "SELECT run_id, accuracy FROM runs WHERE suite_kind = 'accuracy' ORDER BY run_id") == [
        {"run_id": old_run, "accuracy": pytest.approx(2 / 3)},
        {"run_id": new_run, "accuracy": None},
    ]
    assert stored_result(old_store, partition, new_run).figures["correct"] == 4
    assert stored_result(old_store, partition, old_run).figures["correct"] == 2


def test_an_old_runs_suite_reads_its_kinds_parameters_from_the_columns_it_kept_them_in(old_store) -> None:
    # before SuiteRow.params, each kind's parameters were columns of the suite table of their own
    def first(partition: str, run: str):
        return read_rows(old_store, SHARED.suite, partition, run)[0]

    regression = first("demo-academy@demo-academy.checked", "325c7ac1-3832-4ef2-9672-67c87536c73d")
    assert regression.param("baseline_run") == "d8517d1f-6656-4797-91ee-0e365dc1939f"
    pairwise = first("demo-academy@demo-academy.ab", "6f4f783b-ae76-40a4-8359-9eeacf28abe9")
    assert pairwise.param("variant_a") and pairwise.param("variant_b") and pairwise.param("variant_a_label")
    review = first("demo-academy@demo-academy.review", "593432f8-de97-4c14-a1db-63e1cab804d5")
    assert review.param("rubric") and review.param("reviewer_role")
    benchmark = first("demo-academy@demo-academy.standard", "89d0a9b1-ae75-48b0-8091-8a03d5ddd6f5")
    assert (benchmark.param("benchmark_name"), benchmark.param("benchmark_version")) == ("kindgi/golden", "1.0.0")
    assert first("demo-academy.golden", "d8517d1f-6656-4797-91ee-0e365dc1939f").params == "{}"  # a kind with none


def test_a_month_compacting_old_and_new_suites_keeps_each_runs_parameters(old_store) -> None:
    # one month file then holds both the former columns (null in the new run's rows) and params (null in the old's)
    partition, old_run, new_run = "demo-academy@demo-academy.checked", "325c7ac1-3832-4ef2-9672-67c87536c73d", "new-run"
    suite = [
        r.model_copy(update={"params": params_json({"baseline_run": "another-run"})})
        for r in read_rows(old_store, SHARED.suite, partition, old_run)
    ]
    (summary,) = read_rows(old_store, SHARED.run_summary, partition, old_run)
    for asset, rows, model in (
        ("suite", suite, SuiteRow),
        ("run_summary", [summary.model_copy(update={"params": "{}"})], RunRow),
    ):
        write_atomically(to_table(rows, model), table_path(old_store, asset, partition, "2026-12-03", new_run))
    assert compact(old_store, stored_tables(), "9999-12").runs > 0
    assert (
        read_rows(old_store, SHARED.suite, partition, old_run)[0].param("baseline_run")
        == "d8517d1f-6656-4797-91ee-0e365dc1939f"
    )
    assert read_rows(old_store, SHARED.suite, partition, new_run)[0].param("baseline_run") == "another-run"

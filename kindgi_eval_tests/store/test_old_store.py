"""A store written before the kinds' figures moved from `runs` to `run_metrics` still reads: the store of one run per
kind that kindgi-eval wrote at c9653c4 (`old_store_c9653c4.md`) answers every query it answered then, through the
real command line, and each kind's view gives its old runs' figures under the names `runs` gave them."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from kindgi_eval.kinds import kind_views
from kindgi_eval.store import connect, format_rows
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
    with connect(store, query, kind_views()) as con:
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
    assert sql("SELECT suite_kind, count(*) AS n FROM pairwise_runs GROUP BY ALL") == [{"suite_kind": "pairwise", "n": 1}]
    (row,) = sql("SELECT * FROM accuracy_runs")
    assert "win_rate" not in row and "params" not in row  # another kind's columns, and the JSON the columns come from


def test_the_html_report_of_an_old_run_shows_its_kinds_figure(old_store, tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    done = run_cli("report", "8fb7d46b", "--html", str(out))
    assert done.code == 0, done.err
    assert "Accuracy: 0.667, 2 of 3 graded items correct" in out.read_text()

"""The `regression` kind: conversation cases compared one by one with a baseline run; a case that regressed fails the run."""

from collections.abc import Mapping, Sequence
from pathlib import Path

from kindgi_eval.inputs import Suite
from kindgi_eval.kinds.kind import (
    KindRows,
    Pinning,
    Pins,
    Reporting,
    RunStart,
    Stage,
    StageInputs,
    SuiteKind,
    published_starter,
)
from kindgi_eval.kinds.regression.check import CONSUMER
from kindgi_eval.kinds.regression.report import (
    regressed,
    regression_items,
    regression_lines,
    regression_marks,
    regression_summary,
)
from kindgi_eval.kinds.regression.stage import RegressionRow, regression_metrics, regression_rows, resolve_baseline
from kindgi_eval.store import SHARED, FigureColumn, MetricRow, SuiteRow, read_rows, run_partition


def _metrics(rows: KindRows) -> list[MetricRow]:
    return regression_metrics(rows.own)


def _moves(given: StageInputs) -> list[RegressionRow]:
    """Each case of a regression suite beside its baseline run's status: improved, regressed or unchanged; empty
    for other kinds.

    The metadata holds the pass-rate change and its paired 95% interval as numbers, so they plot night over night.
    Query: `kindgi-eval sql "SELECT case_id, baseline_status, status FROM regressions WHERE change = 'regressed'"`.
    """
    baseline_run = given.suite[0].param("baseline_run")
    if baseline_run is None:
        return []
    baseline = read_rows(given.root, SHARED.statuses, run_partition(given.root, baseline_run), baseline_run)
    return regression_rows(baseline_run, baseline, given.statuses)


def _pins(p: Pinning) -> Pins:
    """The baseline run, resolved once and checked to have evaluated exactly this suite's cases."""
    ids = [c.id for c in p.suite.cases]
    return p.pinned._replace(
        baseline=p.pinned.baseline or resolve_baseline(p.root, p.tenant.tenant, p.suite.registered, ids)
    )


def _stored(suite: Suite, pins: Pins) -> Mapping[str, object]:
    return {"baseline_run": pins.baseline}


def _params(suite: Sequence[SuiteRow]) -> Mapping[str, str | None]:
    return {"baseline_run": suite[0].param("baseline_run")}


FIGURES = (
    FigureColumn("baseline_run", "VARCHAR"),
    FigureColumn("improved", "BIGINT", "improved"),
    FigureColumn("regressed", "BIGINT", "regressed"),
    FigureColumn("unchanged", "BIGINT", "unchanged"),
    FigureColumn("pass_rate_change", "DOUBLE", "pass_rate_change"),
    FigureColumn("change_low", "DOUBLE", "pass_rate_change", "low"),
    FigureColumn("change_high", "DOUBLE", "pass_rate_change", "high"),
    FigureColumn("mcnemar_p", "DOUBLE", "mcnemar_p"),
)

KIND = SuiteKind(
    name="regression",
    start=RunStart(pins=_pins, stored_params=_stored),
    report=Reporting(
        metrics=_metrics,
        params=_params,
        figures=FIGURES,
        lines=regression_lines,
        summary=regression_summary,
        marks=regression_marks,
        items=regression_items,
        failed=regressed,
    ),
    stage=Stage("regressions", RegressionRow, _moves),
    consumer=CONSUMER,
    starter=published_starter(
        Path(__file__).parent / "starter",
        "its baseline: a run of the conversation starter (the same cases) published as my-studio.conversation 0.1.0: kindgi-eval suites publish FOLDER --id my-studio.conversation --version 0.1.0, then run it",
    ),
)

__all__ = ["KIND", "regression_metrics", "regression_rows", "resolve_baseline"]

"""The `benchmark` kind: a standard suite of the catalogue, run like a conversation suite, its entry recorded."""

from collections.abc import Mapping, Sequence
from pathlib import Path

from kindgi_eval.inputs import Suite
from kindgi_eval.kinds.benchmark.check import CONSUMER
from kindgi_eval.kinds.benchmark.report import benchmark_lines, benchmark_summary
from kindgi_eval.kinds.kind import Pins, Reporting, RunStart, SuiteKind, published_starter
from kindgi_eval.store import FigureColumn, SuiteRow

PARAMS = ("benchmark_name", "benchmark_version", "benchmark_hash")


def _stored(suite: Suite, pins: Pins) -> Mapping[str, object]:
    """The catalogue entry the suite was published from."""
    registered = suite.registered
    return {name: registered.param(name) for name in PARAMS} if registered else {}


def _params(suite: Sequence[SuiteRow]) -> Mapping[str, str | None]:
    return {name: suite[0].param(name) for name in PARAMS}


FIGURES = (
    FigureColumn("benchmark_name", "VARCHAR"),
    FigureColumn("benchmark_version", "VARCHAR"),
    FigureColumn("benchmark_hash", "VARCHAR"),
)

KIND = SuiteKind(
    name="benchmark",
    start=RunStart(stored_params=_stored),
    report=Reporting(params=_params, figures=FIGURES, lines=benchmark_lines, summary=benchmark_summary),
    consumer=CONSUMER,
    starter=published_starter(
        Path(__file__).parent / "starter",
        "the catalogue entry it names, kindgi/golden 1.0.0, which every registry holds",
    ),
)

"""The `benchmark` kind: a standard suite of the catalogue, run like a conversation suite, its entry recorded."""

from collections.abc import Mapping, Sequence

from kindgi_eval.kinds.benchmark.check import CONSUMER
from kindgi_eval.kinds.benchmark.report import benchmark_lines, benchmark_summary
from kindgi_eval.kinds.kind import SuiteKind
from kindgi_eval.store import FigureColumn, SuiteRow


def _params(suite: Sequence[SuiteRow]) -> Mapping[str, str | None]:
    first = suite[0]
    return {"benchmark_name": first.benchmark_name, "benchmark_version": first.benchmark_version, "benchmark_hash": first.benchmark_hash}


FIGURES = (FigureColumn("benchmark_name", "VARCHAR"), FigureColumn("benchmark_version", "VARCHAR"), FigureColumn("benchmark_hash", "VARCHAR"))

KIND = SuiteKind(name="benchmark", consumer=CONSUMER, params=_params, figures=FIGURES, lines=benchmark_lines, summary=benchmark_summary)

"""The `benchmark` kind: a standard suite of the catalogue, run like a conversation suite, its entry recorded."""

from kindgi_eval.kinds.benchmark.report import benchmark_lines, benchmark_summary
from kindgi_eval.kinds.kind import SuiteKind

KIND = SuiteKind(name="benchmark", lines=benchmark_lines, summary=benchmark_summary)

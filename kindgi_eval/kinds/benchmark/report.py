"""What a benchmark suite adds to the report and the `--json` summary: the catalogue entry it evaluated."""

from __future__ import annotations

from kindgi_eval.kinds.kind import KindResult


def benchmark_lines(result: KindResult) -> list[str]:
    """One line: the entry's name, version and content hash."""
    f = result.figures
    return [f"Benchmark: {f['benchmark_name']} {f['benchmark_version']} (content sha256 {f['benchmark_hash']})"]


def benchmark_summary(result: KindResult) -> dict:
    """The `benchmark` key of `--json`."""
    f = result.figures
    return {"benchmark": {"name": f["benchmark_name"], "version": f["benchmark_version"], "hash": f["benchmark_hash"]}}

"""What a benchmark suite adds to the report and the `--json` summary: the catalogue entry it evaluated."""

from __future__ import annotations

from kindgi_eval.store import RunRow


def benchmark_lines(run: RunRow) -> list[str]:
    """One line: the entry's name, version and content hash."""
    return [f"Benchmark: {run.benchmark_name} {run.benchmark_version} (content sha256 {run.benchmark_hash})"]


def benchmark_summary(run: RunRow) -> dict:
    """The `benchmark` key of `--json`."""
    return {"benchmark": {"name": run.benchmark_name, "version": run.benchmark_version, "hash": run.benchmark_hash}}

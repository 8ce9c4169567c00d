"""The `benchmark` kind: a reference, by name and version, to a standard suite of the catalogue shipped inside the package.

`spec` = `{"benchmark": {"name": "kindgi/golden", "version": "1.0.0"}}`. An entry the catalogue does not hold is refused
at publish time, listing what it holds; a run evaluates the entry's suite and records its name, version and hash.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from kindgi_eval.inputs import (
    CALIBRATION_FILE,
    CASES_FILE,
    catalogue_listing,
    find_benchmark,
    load_benchmark,
)
from kindgi_eval.kinds.table import models_of
from kindgi_eval.registry import Consumer, FolderContent, problem_line
from kindgi_eval.rules import Problem, problems_from_validation


class BenchmarkRef(BaseModel):
    """A catalogue entry by name and version."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    name: str
    version: str


class BenchmarkSpec(BaseModel):
    """A benchmark suite's spec."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    benchmark: BenchmarkRef


def benchmark_problems(spec: Mapping[str, Any]) -> list[str]:
    """The `benchmark` consumer's check: the shape, then that the catalogue holds the entry."""
    try:
        ref = BenchmarkSpec.model_validate(dict(spec)).benchmark
    except ValidationError as e:
        return [problem_line(p) for p in problems_from_validation(e, "spec", None)]
    if find_benchmark(ref.name, ref.version) is None:
        return [problem_line(Problem("spec", None, "benchmark", f"the catalogue holds no benchmark {ref.name} {ref.version}; "
                                     f"it holds {catalogue_listing()}."))]
    return []


def benchmark_folder(spec: Mapping[str, Any]) -> FolderContent:
    """A benchmark suite as a folder: the catalogue entry's files, checked against its pinned hash."""
    ref = BenchmarkSpec.model_validate(dict(spec)).benchmark
    entry = find_benchmark(ref.name, ref.version)
    assert entry is not None, "checked at publish time"
    load_benchmark(entry, models_of)
    files = {name: (entry.folder / name).read_bytes() for name in (CASES_FILE, CALIBRATION_FILE) if (entry.folder / name).is_file()}
    identity = {"kind": "benchmark", "benchmark_name": entry.name, "benchmark_version": entry.version, "benchmark_hash": entry.sha256}
    return FolderContent(files, identity)


CONSUMER = Consumer("benchmark", benchmark_problems, "kindgi-eval run", benchmark_folder)
"""What the registry checks a published `spec` of this kind with, and the suite folder it writes it out as."""

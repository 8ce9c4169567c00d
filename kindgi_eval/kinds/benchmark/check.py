"""The `benchmark` kind: a reference, by name and version, to a standard suite of the registry's catalogue.

`spec` = `{"benchmark": {"name": "kindgi/golden", "version": "1.0.0"}}`. An entry the catalogue does not hold is refused
at publish time, listing what it holds; a run evaluates the entry's suite and records its name, version and hash.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from kindgi_eval.inputs import CALIBRATION_FILE, CASES_FILE, folder_hash
from kindgi_eval.registry import Catalogue, Consumer, FolderContent, listing, problem_line
from kindgi_eval.rules import InputError, Problem, problems_from_validation


class BenchmarkRef(BaseModel):
    """A catalogue entry by name and version."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    name: str
    version: str


class BenchmarkSpec(BaseModel):
    """A benchmark suite's spec."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    benchmark: BenchmarkRef


def benchmark_problems(spec: Mapping[str, Any], catalogue: Catalogue) -> list[str]:
    """The `benchmark` consumer's check: the shape, then that the catalogue holds the entry."""
    try:
        ref = BenchmarkSpec.model_validate(dict(spec)).benchmark
    except ValidationError as e:
        return [problem_line(p) for p in problems_from_validation(e, "spec", None)]
    if catalogue.catalogue_entry(ref.name, ref.version) is None:
        return [
            problem_line(
                Problem(
                    "spec",
                    None,
                    "benchmark",
                    f"the catalogue holds no benchmark {ref.name} {ref.version}; "
                    f"it holds {listing(catalogue.catalogue_entries(), ref.name)}.",
                )
            )
        ]
    return []


def benchmark_folder(spec: Mapping[str, Any], catalogue: Catalogue) -> FolderContent:
    """A benchmark suite as a folder: the catalogue entry's files, which must hash to the entry's hash (an entry answered
    over HTTP is untrusted until they do)."""
    ref = BenchmarkSpec.model_validate(dict(spec)).benchmark
    entry = catalogue.catalogue_entry(ref.name, ref.version)
    where = f"benchmark {ref.name} {ref.version}"
    if entry is None:
        raise InputError(
            [
                Problem(
                    where,
                    None,
                    None,
                    f"the catalogue holds no such entry now; it holds "
                    f"{listing(catalogue.catalogue_entries(), ref.name)}.",
                )
            ]
        )
    files = {name: text.encode("utf-8") for name, text in entry.files.items()}
    if set(files) - {CASES_FILE, CALIBRATION_FILE} or folder_hash(files) != entry.hash:
        raise InputError(
            [
                Problem(
                    where,
                    None,
                    None,
                    f"the catalogue answered files that are not the entry's content (sha256 "
                    f"{entry.hash[:12]}…); nothing was run. Ask the registry's operator to check the entry.",
                )
            ]
        )
    params = {"benchmark_name": entry.name, "benchmark_version": entry.version, "benchmark_hash": entry.hash}
    return FolderContent(files, params)


CONSUMER = Consumer("benchmark", benchmark_problems, "kindgi-eval run", benchmark_folder)
"""What the registry checks a published `spec` of this kind with, and the suite folder it writes it out as."""

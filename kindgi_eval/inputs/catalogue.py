"""The benchmark catalogue: standard suites shipped inside the package, each by name and version, content pinned.

A `benchmark` suite of the registry names one entry (`{"benchmark": {"name": "kindgi/golden", "version": "1.0.0"}}`);
a run evaluates that entry's folder like any suite folder and records its name, version and content hash. An entry
is immutable: its files must hash to the pinned SHA-256, so changing them means adding a new version.
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from kindgi_eval.inputs.suite_folder import ModelsOf, Suite, load_suite
from kindgi_eval.rules import InputError, Problem

CATALOGUE_DIR = Path(__file__).parent / "catalogue"
"""Where the entries' folders are: `<name>/<version>/` holding cases.jsonl and calibration.jsonl."""


class Benchmark(NamedTuple):
    """One catalogue entry."""

    name: str
    version: str
    sha256: str
    """The content hash of its files (as a suite folder's hash is computed), pinned when the entry was added."""
    description: str

    @property
    def folder(self) -> Path:
        """The entry's suite folder."""
        return CATALOGUE_DIR / self.name / self.version


CATALOGUE = (
    Benchmark(
        "kindgi/golden",
        "1.0.0",
        "779e99baa7ad1c8d68d3f086eefc3af82bc21876ad7f27da72bd459cbae09d6f",
        "The golden set of the demo tenant: 36 cases over five funnel stages, with its calibration set.",
    ),
)


def find_benchmark(name: str, version: str) -> Benchmark | None:
    """The entry of that name and version, if the catalogue holds it."""
    return next((b for b in CATALOGUE if (b.name, b.version) == (name, version)), None)


def catalogue_listing() -> str:
    """What the catalogue holds, for a message: `kindgi/golden 1.0.0`."""
    return ", ".join(f"{b.name} {b.version}" for b in CATALOGUE)


def load_benchmark(benchmark: Benchmark, models_of: ModelsOf) -> Suite:
    """The entry's suite, checked against its pinned hash; InputError when the shipped files were changed."""
    suite = load_suite(benchmark.folder, models_of=models_of)
    if suite.hash != benchmark.sha256:
        raise InputError([Problem(str(benchmark.folder), None, None, f"holds other content than benchmark {benchmark.name} "
                                  f"{benchmark.version} was pinned to (sha256 {benchmark.sha256[:12]}…, found {suite.hash[:12]}…). "
                                  "A catalogue entry never changes: restore its files, or add the change as a new version.")])
    return suite

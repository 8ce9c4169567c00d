"""The catalogue's first entry, shipped inside the package: the demo tenant's golden set (`GOLDEN_DIR`), from which a
registry's catalogue of standard suites is seeded once, when its database is made. The registry holds the entries and
answers every lookup; this folder is only where the first one comes from.
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from kindgi_eval.inputs.golden import GOLDEN_DIR
from kindgi_eval.inputs.suite_folder import CALIBRATION_FILE, CASES_FILE, folder_hash


class Seed(NamedTuple):
    """A catalogue entry shipped as a suite folder, its content pinned."""

    name: str
    version: str
    sha256: str
    """The content hash of its files (`folder_hash`), pinned when the entry was added: a catalogue entry never changes."""
    description: str
    folder: Path
    """The entry's suite folder, shipped with the package: cases.jsonl and calibration.jsonl."""

    def files(self) -> dict[str, str]:
        """Its files' texts by name; ValueError when they no longer hash to the pinned content."""
        found = {
            p.name: p.read_bytes() for p in (self.folder / CASES_FILE, self.folder / CALIBRATION_FILE) if p.is_file()
        }
        if folder_hash(found) != self.sha256:
            raise ValueError(
                f"{self.folder} holds other content than catalogue entry {self.name} {self.version} was pinned to "
                f"(sha256 {self.sha256[:12]}…). An entry never changes: restore its files, or add a new version."
            )
        return {name: data.decode("utf-8") for name, data in found.items()}


CATALOGUE_SEED = Seed(
    "kindgi/golden",
    "1.0.0",
    "779e99baa7ad1c8d68d3f086eefc3af82bc21876ad7f27da72bd459cbae09d6f",
    "The golden set of the demo tenant: 36 cases over five funnel stages, with its calibration set.",
    GOLDEN_DIR,
)
"""The entry every registry's catalogue starts with."""

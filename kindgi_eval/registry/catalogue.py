"""The catalogue of standard suites: entries every tenant reads and only an operator publishes, each a conversation
suite's files under a name and a version, immutable, pinned by the content hash a run records.

A `benchmark` suite names one entry (`{"benchmark": {"name": "kindgi/golden", "version": "1.0.0"}}`). Whoever checks
or writes out such a suite is given a `Catalogue` to look it up in: the registry's database on the server, the
registry over HTTP on a runner. Pure.
"""

from __future__ import annotations

from typing import Protocol

from pydantic import BaseModel, ConfigDict

from kindgi_eval.registry.semver import semver_key

ENTRY_NAME_PATTERN = r"^[a-z0-9][a-z0-9._-]{0,63}/[a-z0-9][a-z0-9._-]{0,63}$"
"""An entry's name: `owner/suite`, each part lower-case letters, digits, dots, hyphens and underscores, starting with a
letter or a digit (so each is a URL path segment, never `.` or `..`)."""
MAX_DESCRIPTION = 2000
LISTED = 10
"""At most this many entries are named in a message."""


class EntryInfo(BaseModel):
    """One catalogue entry, as the catalogue lists it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    """`owner/suite`, e.g. `kindgi/golden`."""
    version: str
    """Semver; an entry's versions are immutable, each new one greater."""
    hash: str
    """The content hash of its files, as a run of the folder they make records it."""
    description: str
    published_at: str
    published_by: str
    """The id of the operator token that published it (`package` for the entry a registry is seeded with)."""


class CatalogueEntry(EntryInfo):
    """One catalogue entry with its files."""

    files: dict[str, str]
    """The suite folder's texts by name: cases.jsonl, and calibration.jsonl when it has calibration items."""


class CataloguePage(BaseModel):
    """Every entry of the catalogue, by name, the newest version of each name first."""

    data: list[EntryInfo]


class Catalogue(Protocol):
    """Where a benchmark suite's entry is looked up."""

    def catalogue_entry(self, name: str, version: str) -> CatalogueEntry | None:
        """The entry, with its files; None when the catalogue holds no such name and version."""
        ...

    def catalogue_entries(self) -> list[EntryInfo]:
        """Every entry, by name, the newest version of each name first."""
        ...


def listing(entries: list[EntryInfo], name: str) -> str:
    """What a catalogue holds, for a message about an entry of `name`: that name's versions where it has some
    (`kindgi/golden 1.0.0`), else the first `LISTED` entries and how many more; `nothing` when it is empty."""
    shown = [e for e in entries if e.name == name] or entries
    more = f", and {len(shown) - LISTED} more (kindgi-eval catalogue list)" if len(shown) > LISTED else ""
    return ", ".join(f"{e.name} {e.version}" for e in shown[:LISTED]) + more if shown else "nothing"


def in_catalogue_order(entries: list[EntryInfo]) -> list[EntryInfo]:
    """Entries by name, the newest version of each name first."""
    by_version = sorted(entries, key=lambda e: semver_key(e.version), reverse=True)
    return sorted(by_version, key=lambda e: e.name)

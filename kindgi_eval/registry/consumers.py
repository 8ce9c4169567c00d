"""The runtime consumers of suite kinds: a kind is accepted for publishing only while a consumer for it is given.

The registry never accepts a kind no installed consumer honours (docs/design.md#the-suite-registry). The registry is
given its consumers, one per kind, by whoever serves it or writes a suite folder (the table of installed kinds: each
kind's folder holds its own), so it accepts exactly the kinds installed where it runs. Pure.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from kindgi_eval.registry.catalogue import Catalogue
from kindgi_eval.registry.model import KIND_PATTERN
from kindgi_eval.rules import Case


class FolderContent(NamedTuple):
    """What a stored version is written out as, so a run evaluates it like a suite folder."""

    files: dict[str, bytes]
    """The folder's files by name: cases.jsonl, and calibration.jsonl when the suite has calibration items."""
    params: dict[str, str | list[str]]
    """What the kind names of the suite beyond its files (a regression's baseline, a benchmark's catalogue entry), each
    a text or a list of texts: `registry.json` keeps them for the kind to read back (`RegisteredAs.param`)."""


MAX_GROWTH = 8
"""How many times the size of its version's `spec` (as canonical JSON) a suite folder written from it may be, beyond
`GROWTH_ALLOWANCE`: what a kind writes a version out as is checked against this at publish, so a tick or a run that
writes it never meets a folder gigabytes large."""
GROWTH_ALLOWANCE = 8 << 20
"""Bytes a suite folder may hold beyond `MAX_GROWTH` times its version, so that no small suite is refused by the ratio."""


def written_too_large(written: int, version: int) -> str | None:
    """Why a folder of `written` bytes may not be written out of a version whose spec is `version` bytes; None when it may."""
    bound = MAX_GROWTH * version + GROWTH_ALLOWANCE
    if written <= bound:
        return None
    return (
        f"would write {written / 1e6:,.1f} MB, more than {MAX_GROWTH} times the suite's own {version / 1e6:,.2f} MB "
        f"(and {GROWTH_ALLOWANCE >> 20} MiB more)"
    )


def jsonl(items: Iterable[object]) -> bytes:
    """JSON values one per line, as a suite file holds them."""
    return "".join(json.dumps(item, ensure_ascii=False) + "\n" for item in items).encode("utf-8")


@dataclass(frozen=True)
class Consumer:
    """The code that runs one kind of suite, as the registry sees it: what it makes of a `spec` before it is stored."""

    kind: str
    """The kind it runs, a name `KIND_PATTERN` allows."""
    check: Callable[[Mapping[str, Any], Catalogue], list[str]]
    """Every problem of a `spec` of this kind as a `where: what. fix.` line (`spec.cases[3].must_contain: ...`);
    empty when the consumer can run it. The catalogue is where a spec's references to standard suites are found."""
    runs: str
    """What runs it, as the refusal of another kind names it (`kindgi-eval run`)."""
    folder: Callable[[Mapping[str, Any], Catalogue], FolderContent]
    """A `spec` that passed `check`, written out as the suite folder a run evaluates (with what it names of the catalogue)."""
    read_files: Callable[[Mapping[str, str]], dict[str, Any]] | None = None
    """The `spec` a suite folder's files hold, from each file's text by name; ValueError names a file or line it
    cannot read. None for a kind never published from a folder: its versions keep no files."""
    edit_files: Callable[[Mapping[str, Any]], dict[str, bytes]] | None = None
    """A `spec` as the files a person edits it in, by path inside a folder (`suites pull` writes them beside the
    document); None for a kind whose document is all there is to edit."""
    cases: Callable[[Mapping[str, Any]], list[tuple[str, Case]]] | None = None
    """Each case a run of a `spec` that passed `check` evaluates, with where the spec gives it (`spec.cases[3]`): what
    the tenant's suite limits are held to at publish. None for a kind whose cases are not the tenant's (a catalogue
    entry's)."""


Consumers = Mapping[str, Consumer]
"""The consumers a registry is given, by the kind each runs."""


def checked_consumers(consumers: Consumers) -> Consumers:
    """`consumers`, each under its own kind, every kind's name well formed; ValueError otherwise."""
    for name, consumer in consumers.items():
        if consumer.kind != name or not re.fullmatch(KIND_PATTERN, name):
            raise ValueError(
                f"{name!r}: a consumer must run its kind under that kind's name, of lower-case letters, digits and "
                "hyphens, starting with a letter, at most 32 characters"
            )
    return consumers


def accepted_kinds(consumers: Consumers) -> tuple[str, ...]:
    """The kinds these consumers accept, by name."""
    return tuple(sorted(consumers))

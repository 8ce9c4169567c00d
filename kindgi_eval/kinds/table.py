"""The table of suite kinds: every kind installed under the `kindgi_eval.kinds` entry-point group, the built-ins
joining it the way another package's kind would (this package's own entry points). Reads package metadata only."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cache
from importlib.metadata import entry_points

from kindgi_eval.inputs import SuiteModels
from kindgi_eval.kinds.kind import SuiteKind
from kindgi_eval.registry import Consumers
from kindgi_eval.rules import Case, Scenario
from kindgi_eval.store import SuiteRow, Table, store_tables

GROUP = "kindgi_eval.kinds"
"""The entry-point group a package names its kinds under: `name = "package.module:KIND"`."""


class KindTableError(Exception):
    """The installed kinds disagree: an entry point whose object is no kind, or one named apart from its kind."""


@cache
def kinds() -> Mapping[str, SuiteKind]:
    """Every installed kind by name, loaded once per process."""
    table: dict[str, SuiteKind] = {}
    for point in entry_points(group=GROUP):
        kind = point.load()
        if not isinstance(kind, SuiteKind) or kind.name != point.name:
            raise KindTableError(
                f"entry point {point.name} = {point.value} of group {GROUP} must name a SuiteKind called {point.name!r}"
            )
        table[point.name] = kind
    return table


def consumers() -> Consumers:
    """What the registry is given: each installed kind's consumer, by kind."""
    return {name: kind.consumer for name, kind in kinds().items() if kind.consumer is not None}


def kind_named(name: str) -> SuiteKind:
    """The kind called `name`; KeyError naming the installed ones when there is none."""
    table = kinds()
    if name not in table:
        raise KeyError(f"no suite kind {name!r} is installed; the kinds are {', '.join(sorted(table))}")
    return table[name]


def models_of(name: str) -> SuiteModels:
    """What a suite folder of the kind called `name` is read with; KeyError as `kind_named` says."""
    kind = kind_named(name)
    return SuiteModels(kind.reading.case_model, kind.reading.calibration_model, kind.reading.files)


def cases_of(rows: Sequence[SuiteRow]) -> list[Case]:
    """The cases of a stored suite, in file order, each read back as its kind's case model."""
    model = kind_named(rows[0].suite_kind).reading.case_model if rows else Case
    return [model.model_validate_json(r.body) for r in rows if r.kind == "case"]


def scenarios_of(rows: Sequence[SuiteRow]) -> list[Scenario]:
    """The scenarios of a stored suite, in file order."""
    return [Scenario.model_validate_json(r.body) for r in rows if r.kind == "scenario"]


def stored_tables() -> tuple[Table, ...]:
    """Every table a store holds, in its order: the shared ones, with the own tables of the installed kinds (by name)
    before `run_metrics` and `run_summary`."""
    return store_tables(
        sorted((kind.stage.stored for kind in kinds().values() if kind.stage is not None), key=lambda t: t.asset)
    )


def table_named(asset: str) -> Table:
    """The stored table of the asset called `asset`, shared or a kind's own; KeyError naming the tables when none is."""
    found = {t.asset: t for t in stored_tables()}
    if asset not in found:
        raise KeyError(f"no stored table {asset!r}; the tables are {', '.join(found)}")
    return found[asset]

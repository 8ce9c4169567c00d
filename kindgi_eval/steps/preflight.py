"""What a run knows of its suite before it asks anything, in two parts.

The cheap part (`planned_suite`) reads a suite folder's bytes for its kind and content hash and parses nothing: what a
schedule's or sensor's tick may afford for every declared suite at once. The deep part (`preflight`) is the check a run
makes as it starts, on the command line and in the `suite` asset alike: the suite parsed and checked against its
tenant, what its kind needs of the machine, the tenant's call budget, and what the run is pinned to. Either raises
InputError listing the problems, before any model call. Reads the suite folder; touches no socket.
"""

from __future__ import annotations

from typing import NamedTuple

from kindgi_eval.inputs import LoadedTenant, RunSettings, Suite, SuiteIdentity, load_checked_suite, suite_identity
from kindgi_eval.kinds import Pinning, Pins, SuiteKind, hold_budget, kind_named, models_of
from kindgi_eval.store import StorePath


class Preflight(NamedTuple):
    """A run's suite, checked, its kind, and what the run is pinned to."""

    suite: Suite
    """The suite, parsed and checked against the tenant."""
    kind: SuiteKind
    """The suite's kind, from the table of installed kinds."""
    pins: Pins
    """What the run is pinned to as it starts (a baseline run, two variants), kept from an earlier start if any."""


def planned_suite(settings: RunSettings) -> SuiteIdentity:
    """The cheap part: the kind and content hash of the settings' suite folder, from its files' bytes; no case parsed
    and no spec checked. InputError when the folder cannot be read."""
    return suite_identity(settings.eval_dir)


def preflight(
    settings: RunSettings, loaded: LoadedTenant, root: StorePath, pinned: Pins = Pins(), *, mock: bool | None = None
) -> Preflight:
    """The deep part: the suite of `settings` parsed and checked against the tenant `loaded`, what its kind needs of
    this machine (a custom handler's sandbox), the tenant's call budget for a run of it, and its pins resolved in the
    store at `root` (`pinned`: what an earlier start of the run pinned; `mock`: the command line's `--mock`, None in a
    Dagster run). InputError listing the problems, before any model call."""
    suite = load_checked_suite(settings.eval_dir, loaded, models_of=models_of)
    kind = kind_named(suite.kind)
    kind.start.needs(suite, settings)
    hold_budget(kind, suite, judged=settings.judge_model is not None)
    pins = kind.start.pins(Pinning(root, loaded.tenant, suite, settings, pinned, mock=mock))
    return Preflight(suite, kind, pins)

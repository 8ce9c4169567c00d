"""The stored run a replay re-judges, as `kindgi-eval replay --from` and the launchpad's `replay_from` name it.

Reads the store's listing and the run's summary; writes nothing.
"""

from __future__ import annotations

from typing import NamedTuple

from kindgi_eval.rules import InputError, Problem
from kindgi_eval.store.layout import SHARED, StorePath, read_rows, read_table, run_partition
from kindgi_eval.store.rows import RunRow

REPLAYED_FROM = (SHARED.suite, SHARED.agent_replies, SHARED.outcomes)
"""The tables a replay reads from its source run instead of computing them: no agent is asked."""


class ReplaySource(NamedTuple):
    """A stored run a replay may re-judge."""

    partition: str
    """Its suite, the partition the replay runs for."""
    summary: RunRow
    """Its row of `runs`: tenant, suite folder, agent and the rest of its lineage."""


def replay_source(root: StorePath, source: str, where: str, partition: str | None = None) -> ReplaySource:
    """Stored run `source`, whose suite, replies and outcomes a replay re-judges.

    InputError naming `where` (the flag or config field that named the run) when the store has no such run, when it
    is a run of another suite than `partition` (when given), or when its replies are gone (pruned, never stored)."""
    key = run_partition(root, source)
    if key is None:
        raise InputError(
            [
                Problem(
                    where,
                    None,
                    None,
                    f"no run {source!r} in the store at {root}. See `kindgi-eval runs` "
                    "for the stored runs, newest first.",
                )
            ]
        )
    if partition is not None and key != partition:
        raise InputError(
            [
                Problem(
                    where,
                    None,
                    None,
                    f"run {source} is a run of suite {key}, not of {partition}: a replay "
                    f"re-judges the replies of its own suite. Pick a run of {partition}: see `kindgi-eval "
                    f"runs --suite {partition}`.",
                )
            ]
        )
    missing = [t.asset for t in REPLAYED_FROM if read_table(root, t, key, source) is None]
    if missing:
        raise InputError(
            [
                Problem(
                    where,
                    None,
                    None,
                    f"run {source} has no stored {', '.join(missing)} (pruned?), so there are no replies to re-judge.",
                )
            ]
        )
    (summary,) = read_rows(root, SHARED.run_summary, key, source)
    return ReplaySource(key, summary)

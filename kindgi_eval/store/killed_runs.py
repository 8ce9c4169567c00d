"""The killed run a resume finishes, found by its id, and refused when it completed or was finished already.

Reads the store's listing, the runs' recordings in progress and the `runs` view; writes nothing.
"""

from __future__ import annotations

from typing import NamedTuple

from kindgi_eval.rules import InputError, Problem
from kindgi_eval.store.batches import Manifest, area_run_id, find_run_areas, read_manifest
from kindgi_eval.store.layout import StorePath, run_keys
from kindgi_eval.store.views import connect


class KilledRun(NamedTuple):
    """A run that stopped before it stored its summary, with the rows it had recorded."""

    area: StorePath
    """Its recordings in progress (`batches.run_area`)."""
    run_id: str
    """Its id."""


def killed_run(root: StorePath, prefix: str, where: str) -> KilledRun:
    """The killed run a run id or unique prefix names; InputError naming `where` when it names none, several, or a
    run that completed."""
    areas = find_run_areas(root, prefix) if prefix else []
    exact = [a for a in areas if area_run_id(a) == prefix]
    areas = exact or areas
    if len(areas) == 1:
        return KilledRun(areas[0], area_run_id(areas[0]))
    if len(areas) > 1:
        listed = "; ".join(area_run_id(a) for a in areas)
        raise InputError(
            [
                Problem(
                    where,
                    None,
                    None,
                    f"{prefix!r} begins {len(areas)} killed runs' ids: {listed}. Give more characters of the one you mean.",
                )
            ]
        )
    if prefix and any(k.run_id.startswith(prefix) for k in run_keys(root)):
        raise InputError([Problem(where, None, None, f"run {prefix!r} completed: there is nothing to resume.")])
    raise InputError(
        [
            Problem(
                where,
                None,
                None,
                f"no killed run {prefix!r} in the store at {root}. A run killed before it "
                "asked the agent recorded nothing to resume: start it again with kindgi-eval run.",
            )
        ]
    )


def refuse_finished(root: StorePath, area: StorePath, recorded: Manifest, where: str) -> None:
    """InputError naming `where` when the killed run was finished already, by a resume that completed or one killed
    in turn."""
    killed = recorded.run_id
    if any(k.run_id == killed for k in run_keys(root, recorded.partition)):
        raise InputError([Problem(where, None, None, f"run {killed} completed: there is nothing to resume.")])
    query = "SELECT run_id FROM runs WHERE resumed_from = ? ORDER BY started_at"
    with connect(root, query) as con:
        done = [row[0] for row in con.execute(query, [killed]).fetchall()]
    if done:
        raise InputError(
            [
                Problem(
                    where,
                    None,
                    None,
                    f"run {killed} was finished already by run {done[0]}: there is nothing to resume.",
                )
            ]
        )
    later = [
        area_run_id(a)
        for a in find_run_areas(root, "", recorded.partition)
        if a != area and (m := read_manifest(a)) and m.resumes == killed
    ]
    if later:
        raise InputError(
            [
                Problem(
                    where,
                    None,
                    None,
                    f"run {killed} was resumed by run {later[-1]}, which stopped too: "
                    f"resume that one instead (kindgi-eval run --resume {later[-1]}), so nothing it recorded is asked again.",
                )
            ]
        )

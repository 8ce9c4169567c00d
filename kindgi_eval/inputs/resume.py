"""What a resume must find unchanged since the killed run recorded its rows: the suite, the tenant configuration and
the settings; and the settings a resume runs with. Pure: compares manifests and settings, touches no file."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from kindgi_eval.inputs.settings import SETTING, SETTINGS, RunSettings, check_value
from kindgi_eval.rules import InputError, Problem

if TYPE_CHECKING:
    from kindgi_eval.store import Manifest

MAY_CHANGE = frozenset({"concurrency"})
"""Settings a resume may change: how many calls are in flight changes no row."""


def manifest_of(
    run_id: str,
    partition: str,
    settings: RunSettings,
    *,
    suite_hash: str,
    config_hash: str,
    replies_from: str | None = None,
    resumes: str | None = None,
) -> Manifest:
    """What a run's rows are recorded under: its settings and the hashes of the files it reads."""
    from kindgi_eval.store import (
        Manifest,
    )  # here, not above: the store's Parquet and DuckDB, which --help and validate never need

    return Manifest(
        run_id=run_id,
        partition=partition,
        settings=settings.model_dump(mode="json"),
        suite_hash=suite_hash,
        config_hash=config_hash,
        replies_from=replies_from,
        resumes=resumes,
    )


def changes_since(recorded: Manifest, now: Manifest) -> list[Problem]:
    """Every difference between what a killed run recorded its rows under and what its resume would run with,
    as a problem naming what changed; none when the rows may be reused."""
    run, problems = recorded.run_id, []
    then_settings = RunSettings.model_validate(recorded.settings)
    now_settings = RunSettings.model_validate(now.settings)
    refused = "so its recorded replies and judge samples would not be this run's. Start a new run instead."
    if recorded.partition != now.partition:
        problems.append(
            Problem(
                "--resume",
                None,
                None,
                f"run {run} evaluated suite {recorded.partition}, not {now.partition}; {refused}",
            )
        )
    if recorded.suite_hash != now.suite_hash:
        problems.append(
            Problem(
                now_settings.eval_dir,
                None,
                None,
                f"the suite (cases.jsonl or calibration.jsonl) changed since run {run} read it, {refused}",
            )
        )
    if recorded.config_hash != now.config_hash:
        where = (
            f"{now_settings.config_dir}/tenant.toml"
            if now_settings.config_dir
            else "the packaged demo tenant's tenant.toml"
        )
        problems.append(
            Problem(where, None, None, f"the tenant configuration changed since run {run} read it, {refused}")
        )
    for s in SETTINGS:
        before, after = getattr(then_settings, s.field), getattr(now_settings, s.field)
        if s.field not in MAY_CHANGE and before != after:
            problems.append(
                Problem(
                    f"{s.flag} ({s.var})",
                    None,
                    None,
                    f"run {run} ran with {_shown(before)}, this run with {_shown(after)}; {refused}",
                )
            )
    if recorded.replies_from != now.replies_from:
        problems.append(
            Problem(
                "--resume",
                None,
                None,
                f"run {run} judged the replies of {_shown(recorded.replies_from)}, this run those of {_shown(now.replies_from)}; {refused}",
            )
        )
    return problems


def resumed_settings(recorded: Manifest, flags: Mapping[str, object], *, mock: bool = False) -> RunSettings:
    """The settings a resume of a killed run runs with: the ones it recorded. A flag given beside `--resume` must
    equal the recorded value (else InputError naming it), except `--concurrency`, which a resume may change.

    No environment variable is read: the environment a run is resumed in is often not the one it started in."""
    settings = RunSettings.model_validate(recorded.settings)
    given = {field: value for field, value in flags.items() if value is not None and field in SETTING}
    if mock:
        given = {**given, "agent_model": "mock:agent"}
    problems, changes = [], {}
    for field, value in given.items():
        try:
            value = check_value(SETTING[field], value)
        except ValueError as e:
            problems.append(Problem(SETTING[field].flag, None, None, str(e)))
            continue
        if field in MAY_CHANGE:
            changes[field] = value
        elif value != getattr(settings, field):
            flag = "--mock" if mock and field == "agent_model" else SETTING[field].flag
            problems.append(
                Problem(
                    flag,
                    None,
                    None,
                    f"run {recorded.run_id} ran with {_shown(getattr(settings, field))}, not {_shown(value)}; "
                    "a resume finishes a run with the settings it started with. Drop the flag, or start a new run.",
                )
            )
    if problems:
        raise InputError(problems)
    return settings.model_copy(update=changes)


def _shown(value: object) -> str:
    return "none" if value is None else repr(value)

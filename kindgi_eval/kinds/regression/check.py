"""The `regression` kind: conversation cases run and compared, case by case, with a stored baseline run.

`spec` = `{"baseline": {"runId": ...} | {"suiteId": ..., "version": ...}, "cases": [...], "calibration"?: [...]}`,
the cases and calibration items in the conversation format (docs/design.md#cases, docs/design.md#calibration). A run
names the baseline as it starts: the run given, or the latest run of the suite version given; a baseline that does not
exist, or that evaluated other cases, stops the run before any agent call. Pure: reads no file.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from kindgi_eval.registry import (
    CONVERSATION_KEYS,
    SUITE_ID_PATTERN,
    Catalogue,
    Consumer,
    FolderContent,
    conversation_cases,
    is_semver,
    problem_line,
    read_conversation,
    suite_files,
)
from kindgi_eval.rules import Case, Problem, problems_from_validation

RUN_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
"""A whole run id, as Dagster makes them (a UUID in lower case); never a prefix."""
_SUITE_ID = re.compile(SUITE_ID_PATTERN)


class RunBaseline(BaseModel):
    """A baseline named by its run."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    runId: str = Field(min_length=1)


class VersionBaseline(BaseModel):
    """A baseline named by a suite version: its latest run when the regression run starts."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    suiteId: str = Field(min_length=1)
    """The suite whose run is the baseline: a suite id as the registry takes one, since it names a stored partition."""
    version: str


def read_baseline(value: object) -> tuple[RunBaseline | VersionBaseline | None, list[Problem]]:
    """The baseline of a regression spec, or the problems with it (named under `spec.baseline`)."""
    if not isinstance(value, dict):
        return None, [
            Problem("spec", None, "baseline", 'must be an object: {"runId": ...} or {"suiteId": ..., "version": ...}.')
        ]
    model = RunBaseline if "runId" in value else VersionBaseline
    try:
        baseline = model.model_validate(value)
    except ValidationError as e:
        return None, [
            Problem("spec", None, f"baseline.{p.field}" if p.field else "baseline", p.message)
            for p in problems_from_validation(e, "spec", None)
        ]
    if isinstance(baseline, VersionBaseline) and not _SUITE_ID.fullmatch(baseline.suiteId):
        return None, [
            Problem(
                "spec",
                None,
                "baseline.suiteId",
                f"{baseline.suiteId[:80]!r} is not a suite id: up to 128 letters, "
                "digits, dots, hyphens and underscores, starting with a letter or a digit, e.g. acme.golden.",
            )
        ]
    if isinstance(baseline, VersionBaseline) and not is_semver(baseline.version):
        return None, [
            Problem(
                "spec", None, "baseline.version", f"{baseline.version!r} is not a semantic version (MAJOR.MINOR.PATCH)."
            )
        ]
    if isinstance(baseline, RunBaseline) and not RUN_ID.fullmatch(baseline.runId):
        return None, [
            Problem(
                "spec",
                None,
                "baseline.runId",
                f"{baseline.runId[:80]!r} is not a whole run id. A version names "
                "its baseline for good, and a prefix that names one run now may name another, or several, "
                "later: give the whole id, as `kindgi-eval runs` lists it, or name the baseline by "
                '{"suiteId", "version"}.',
            )
        ]
    return baseline, []


def regression_problems(spec: Mapping[str, Any], catalogue: Catalogue) -> list[str]:
    """The `regression` consumer's check: the baseline's shape, then the cases as a conversation suite's."""
    problems: list[Problem] = []
    if "baseline" not in spec:
        problems.append(
            Problem(
                "spec",
                None,
                "baseline",
                'required field is missing. Name the run to compare with: {"runId": ...} or {"suiteId": ..., "version": ...}.',
            )
        )
    else:
        problems += read_baseline(spec["baseline"])[1]
    cases = {k: v for k, v in spec.items() if k != "baseline"}
    found = read_conversation(cases).problems
    problems += [
        Problem(
            p.file,
            p.line,
            p.field,
            p.message.replace("A conversation suite's spec holds only", "A regression suite's spec holds baseline and"),
        )
        for p in found
    ]
    return [problem_line(p) for p in problems]


def regression_folder(spec: Mapping[str, Any], catalogue: Catalogue) -> FolderContent:
    """A regression suite as a folder: its conversation cases, with the baseline in `registry.json`."""
    baseline, _ = read_baseline(spec["baseline"])
    params: dict[str, str] = {}
    if isinstance(baseline, RunBaseline):
        params["baseline_run_id"] = baseline.runId
    elif baseline is not None:
        params = {"baseline_suite_id": baseline.suiteId, "baseline_version": baseline.version}
    return FolderContent(suite_files({k: spec[k] for k in CONVERSATION_KEYS if k in spec}), params)


def regression_cases(spec: Mapping[str, Any]) -> list[tuple[str, Case]]:
    """A checked regression spec's cases, each with its place (`spec.cases[3]`)."""
    return conversation_cases({k: spec[k] for k in CONVERSATION_KEYS if k in spec})


CONSUMER = Consumer("regression", regression_problems, "kindgi-eval run", regression_folder, cases=regression_cases)
"""What the registry checks a published `spec` of this kind with, and the suite folder it writes it out as."""

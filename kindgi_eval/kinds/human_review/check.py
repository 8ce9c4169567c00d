"""The `human-review` kind: conversation cases whose replies people label against a rubric, and the promotion of
those labels into a new version of a suite's calibration set.

`spec` = `{"rubric": [str, ...], "reviewerRole": str, "cases": [...], "calibration"?: [...]}`, the cases and
calibration items in the conversation format (docs/design.md#cases, docs/design.md#calibration). Every rubric item is a
free-text criterion of every case: the suite folder gives each case its own review entries followed by the rubric items
it lacks, so a calibrated judge grades the same items a person labels, and the review queue holds one row per reply and
rubric item. A promotion never edits a version: it publishes the latest version's spec with the new calibration items
added, as the next minor version, conditional on the latest ETag. Pure: reads no file.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from kindgi_eval.registry import (
    Catalogue,
    Consumer,
    FolderContent,
    SemVer,
    canonical_json,
    etag,
    jsonl,
    parse_semver,
    problem_line,
    read_conversation,
    written_too_large,
)
from kindgi_eval.rules import Case, Problem, meant_dimension

KIND = "human-review"
SPEC_KEYS = ("rubric", "reviewerRole", "cases", "calibration")
"""The fields of a human-review suite's `spec`: `rubric` and `reviewerRole` (required), `cases` (required, the
lines of cases.jsonl) and `calibration` (optional, the lines of calibration.jsonl)."""
PROMOTABLE_KINDS = ("conversation", "regression", KIND)
"""The kinds whose `spec.calibration` holds conversation calibration items (docs/design.md#calibration), which a
promotion adds to."""


def rubric_problems(spec: Mapping[str, Any]) -> list[Problem]:
    """What is wrong with `rubric` and `reviewerRole`: missing, of the wrong type, empty, or a rubric item repeated."""
    problems: list[Problem] = []
    rubric = spec.get("rubric")
    if "rubric" not in spec:
        problems.append(
            Problem(
                "spec",
                None,
                "rubric",
                'required field is missing. Give the rubric as a list of the items a reviewer labels, e.g. ["Answers the price question"].',
            )
        )
    elif not isinstance(rubric, list):
        problems.append(Problem("spec", None, "rubric", "must be a list of rubric items (strings)."))
    elif not rubric:
        problems.append(Problem("spec", None, "rubric", "holds no items. Give at least one rubric item."))
    else:
        first: dict[str, int] = {}
        for index, item in enumerate(rubric):
            if not isinstance(item, str) or not item.strip():
                problems.append(Problem("spec", None, f"rubric[{index}]", "must be a rubric item: a non-blank string."))
            elif item in first:
                problems.append(
                    Problem(
                        "spec",
                        None,
                        f"rubric[{index}]",
                        f"duplicate rubric item, first given as rubric[{first[item]}]. Give each item once.",
                    )
                )
            elif meant_dimension(item):
                problems.append(
                    Problem(
                        "spec",
                        None,
                        f"rubric[{index}]",
                        f"{item!r} is one typo from the fixed criterion "
                        f"{meant_dimension(item)!r}, so it would be graded as free text. Write a rubric item in words.",
                    )
                )
            else:
                first[item] = index
    role = spec.get("reviewerRole")
    if "reviewerRole" not in spec:
        problems.append(
            Problem(
                "spec",
                None,
                "reviewerRole",
                'required field is missing. Name who labels the replies, e.g. "sales lead".',
            )
        )
    elif not isinstance(role, str) or not role.strip():
        problems.append(
            Problem("spec", None, "reviewerRole", "must be a non-blank string naming who labels the replies.")
        )
    return problems


def human_review_problems(spec: Mapping[str, Any], catalogue: Catalogue) -> list[str]:
    """The `human-review` consumer's check: unknown fields, the rubric and role, then the cases and calibration items
    by the conversation suite's rules, each line naming its path (`spec.rubric[2]`, `spec.cases[0].expect`)."""
    problems = [
        Problem("spec", None, key, f"unknown field. A human-review suite's spec holds only {', '.join(SPEC_KEYS)}.")
        for key in sorted(set(spec) - set(SPEC_KEYS))
    ]
    problems += rubric_problems(spec)
    problems += read_conversation({k: spec[k] for k in ("cases", "calibration") if k in spec}).problems
    if not problems:
        problems += folder_size_problems(spec)
    return [problem_line(p) for p in problems]


def folder_size_problems(spec: Mapping[str, Any]) -> list[Problem]:
    """The suite folder copies the rubric into every case (the judge grades each case's own review entries), so its
    size is about the cases' plus the rubric's times the cases: refused (naming `spec.rubric`) when that is more than
    a folder may grow its version by. Measured without writing it."""
    cases, rubric = spec["cases"], spec["rubric"]
    each = len(json.dumps(rubric, ensure_ascii=False).encode("utf-8")) + len(', "review": ')
    written = sum(len(json.dumps(case, ensure_ascii=False).encode("utf-8")) + 1 for case in cases) + len(cases) * each
    reason = written_too_large(written, len(canonical_json(spec)))
    if reason is None:
        return []
    return [
        Problem(
            "spec",
            None,
            "rubric",
            f"its {len(rubric):,} items, copied into each of the {len(cases):,} cases as the "
            f"suite folder a run reads holds them, {reason}. Give fewer or shorter rubric items, or split the cases "
            "over several suites.",
        )
    ]


def reviewed_case(case: Mapping[str, Any], rubric: Sequence[str]) -> dict[str, Any]:
    """A case as the suite folder holds it: its own review entries, then each rubric item it does not already name."""
    own = case.get("review")
    entries = [] if own is None else [own] if isinstance(own, str) else list(own)
    return {**case, "review": entries + [item for item in rubric if item not in entries]}


def human_review_folder(spec: Mapping[str, Any], catalogue: Catalogue) -> FolderContent:
    """A human-review suite as a folder: its cases with the rubric as review entries, its calibration items, and the
    rubric and reviewer role in `registry.json`."""
    rubric = tuple(spec["rubric"])
    files = {"cases.jsonl": jsonl(reviewed_case(case, rubric) for case in spec["cases"])}
    if "calibration" in spec:
        files["calibration.jsonl"] = jsonl(spec["calibration"])
    return FolderContent(files, {"rubric": list(rubric), "reviewer_role": spec["reviewerRole"]})


class Promotion(NamedTuple):
    """The next version of a suite with promoted calibration items added, and how to publish it safely."""

    document: dict[str, Any]
    """The suite document to publish: the latest version's, with the new items and the next minor version."""
    if_match: str
    """The latest version's ETag: the publish is refused (412) if another version was published since it was read."""
    added: tuple[str, ...]
    """The ids of the items added."""
    present: tuple[str, ...]
    """The ids of the items the latest version holds already, left as they are."""


def next_minor(version: str) -> str:
    """The next minor release after `version`: `1.4.2` -> `1.5.0`, `1.4.0-rc.1` -> `1.5.0`."""
    found = parse_semver(version)
    return str(SemVer(found.major, found.minor + 1, 0, ()))


def promotion(latest: Mapping[str, Any], items: Sequence[Mapping[str, Any]]) -> Promotion:
    """The new version of the suite whose latest version the registry answered (`{"suite", "hash", ...}`) with
    `items` (calibration items, docs/design.md#calibration) added to `spec.calibration`, skipping ids it already holds;
    ValueError when the suite's kind holds no conversation calibration set."""
    suite = latest["suite"]
    if suite["kind"] not in PROMOTABLE_KINDS:
        raise ValueError(
            f"{suite['id']} is a {suite['kind']!r} suite, whose spec holds no conversation calibration set. "
            f"Promote into a suite of kind {', '.join(PROMOTABLE_KINDS)}."
        )
    calibration = list(suite["spec"].get("calibration", []))
    held = {item.get("id") for item in calibration if isinstance(item, dict)}
    added = [dict(item) for item in items if item["id"] not in held]
    present = tuple(item["id"] for item in items if item["id"] in held)
    spec = {**suite["spec"], "calibration": calibration + added}
    document = {**suite, "version": next_minor(suite["version"]), "spec": spec}
    return Promotion(document, etag(latest["hash"]), tuple(i["id"] for i in added), present)


def human_review_cases(spec: Mapping[str, Any]) -> list[tuple[str, Case]]:
    """A checked human-review spec's cases as the run reads them, each with the rubric among its review entries, with
    its place (`spec.cases[3]`)."""
    rubric = tuple(spec["rubric"])
    return [
        (f"spec.cases[{index}]", case)
        for index, case in enumerate(
            read_conversation({"cases": [reviewed_case(case, rubric) for case in spec["cases"]]}).cases
        )
    ]


CONSUMER = Consumer(KIND, human_review_problems, "kindgi-eval run", human_review_folder, cases=human_review_cases)
"""What the registry checks a published `spec` of this kind with, and the suite folder it writes it out as."""

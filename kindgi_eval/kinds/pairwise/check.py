"""The `pairwise` kind: two agent variants answer the same prompts, and the calibrated judge prefers one in both orders.

`spec` = `{"prompts": [...], "variantA": {"agentId", "version"}, "variantB": {...}, "calibration"?: [...]}`. A prompt is
the contact's message, or `{"id"?, "text", "history"?, "contact"?}`; one without an id is `prompt-<n>`. Each variant
names an agent the tenant declares in the tenants file (`[tenant.agents.<agentId>]`, with that `version`), checked
when a run starts, since the registry does not read tenants files. The hand-labelled pairs that calibrate the judge
are `{"id"?, "input", "replyA": [...], "replyB": [...], "label": "A" | "B" | "tie"}`. Pure: reads no file.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from kindgi_eval.inputs import RegisteredAs
from kindgi_eval.kinds.accuracy.check import input_turn, under, unique
from kindgi_eval.registry import Catalogue, Consumer, FolderContent, jsonl, problem_line
from kindgi_eval.rules import (
    Case,
    PairwiseCalibration,
    PairwiseCase,
    Preference,
    Problem,
    problems_from_validation,
)

SPEC_KEYS = ("prompts", "variantA", "variantB", "calibration")


class VariantRef(BaseModel):
    """A variant as published: a declared agent's id and version label."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    agentId: str = Field(min_length=1)
    version: str = Field(min_length=1)


class LabelledPair(BaseModel):
    """A hand-written pair of replies with a person's preference, as published."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    id: str | None = Field(default=None, min_length=1)
    input: Any
    replyA: tuple[str, ...] = Field(min_length=1)
    replyB: tuple[str, ...] = Field(min_length=1)
    label: Preference


class PairwiseSpec(BaseModel):
    """What a run of a pairwise suite needs, read from its spec."""

    prompts: list[PairwiseCase]
    """Two cases per prompt, variant A's then variant B's."""
    calibration: list[PairwiseCalibration]
    variant_a: VariantRef
    variant_b: VariantRef


def read_pairwise(spec: Mapping[str, Any]) -> tuple[PairwiseSpec | None, list[Problem]]:
    """The prompts, variants and labelled pairs of `spec`, or every problem, each naming its path."""
    problems = [
        Problem("spec", None, key, f"unknown field. A pairwise suite's spec holds only {', '.join(SPEC_KEYS)}.")
        for key in sorted(set(spec) - set(SPEC_KEYS))
    ]
    variants = {key: _variant(spec, key, problems) for key in ("variantA", "variantB")}
    a, b = variants["variantA"], variants["variantB"]
    if a is not None and a == b:
        problems.append(
            Problem(
                "spec",
                None,
                "variantB",
                "is the same agent and version as variantA; a pairwise suite compares two variants.",
            )
        )
    cases: list[PairwiseCase] = []
    prompts = spec.get("prompts")
    if not isinstance(prompts, list) or not prompts:
        problems.append(
            Problem(
                "spec",
                None,
                "prompts",
                "must be a non-empty list of prompts (each a message, or {id?, text, history?, contact?}).",
            )
        )
        prompts = []
    seen: dict[str, int] = {}
    for index, prompt in enumerate(prompts):
        where = f"prompts[{index}]"
        prompt_id = prompt.get("id") if isinstance(prompt, dict) else None
        if isinstance(prompt, dict):
            prompt = {k: v for k, v in prompt.items() if k != "id"}
        if prompt_id is not None and (not isinstance(prompt_id, str) or not prompt_id):
            problems.append(Problem("spec", None, f"{where}.id", "must be a non-empty string."))
            continue
        turn = input_turn(where, prompt, problems)
        pid = prompt_id or f"prompt-{index + 1}"
        if turn is None or not unique(pid, index, "prompts", seen, problems):
            continue
        cases += [
            PairwiseCase(
                id=f"{pid}/{variant}",
                text=turn.text,
                history=turn.history,
                contact=turn.contact,
                prompt_id=pid,
                variant=variant,
            )
            for variant in ("A", "B")
        ]
    calibration = _labelled(spec.get("calibration", []), problems)
    if problems or a is None or b is None:
        return None, problems
    return PairwiseSpec(prompts=cases, calibration=calibration, variant_a=a, variant_b=b), []


def pairwise_problems(spec: Mapping[str, Any], catalogue: Catalogue) -> list[str]:
    """The `pairwise` consumer's check: every problem of `spec` as one line."""
    return [problem_line(p) for p in read_pairwise(spec)[1]]


def pairwise_folder(spec: Mapping[str, Any], catalogue: Catalogue) -> FolderContent:
    """A pairwise suite as a folder: two cases per prompt, the labelled pairs, and the variants in `registry.json`."""
    read, _ = read_pairwise(spec)
    assert read is not None, "checked at publish time"
    files = {"cases.jsonl": jsonl(c.model_dump(mode="json", exclude_defaults=True) for c in read.prompts)}
    if read.calibration:
        files["calibration.jsonl"] = jsonl(i.model_dump(mode="json") for i in read.calibration)
    params = {
        "variant_a_id": read.variant_a.agentId,
        "variant_a_version": read.variant_a.version,
        "variant_b_id": read.variant_b.agentId,
        "variant_b_version": read.variant_b.version,
    }
    return FolderContent(files, params)


def registered_variant(registered: RegisteredAs, variant: str) -> tuple[str, str]:
    """Variant `a` or `b` as `pairwise_folder` wrote it in `registry.json`: its agent id and version label."""
    return registered.param(f"variant_{variant}_id"), registered.param(f"variant_{variant}_version")


def _variant(spec: Mapping[str, Any], key: str, problems: list[Problem]) -> VariantRef | None:
    if key not in spec:
        problems.append(
            Problem(
                "spec", None, key, 'required field is missing. Name a declared agent: {"agentId": ..., "version": ...}.'
            )
        )
        return None
    try:
        return VariantRef.model_validate_json(json.dumps(spec[key]))
    except ValidationError as e:
        problems.extend(under(key, p) for p in problems_from_validation(e, "spec", None))
        return None


def _labelled(values: object, problems: list[Problem]) -> list[PairwiseCalibration]:
    if not isinstance(values, list):
        problems.append(Problem("spec", None, "calibration", "must be a list of labelled pairs."))
        return []
    items: list[PairwiseCalibration] = []
    seen: dict[str, int] = {}
    for index, value in enumerate(values):
        where = f"calibration[{index}]"
        try:
            pair = LabelledPair.model_validate_json(json.dumps(value))
        except ValidationError as e:
            problems.extend(under(where, p) for p in problems_from_validation(e, "spec", None))
            continue
        turn = input_turn(f"{where}.input", pair.input, problems)
        item_id = pair.id or f"pair-{index + 1}"
        if turn is None or not unique(item_id, index, "calibration", seen, problems):
            continue
        items.append(
            PairwiseCalibration(
                id=item_id,
                history=turn.history,
                text=turn.text,
                reply_a=pair.replyA,
                reply_b=pair.replyB,
                label=pair.label,
            )
        )
    return items


def pairwise_cases(spec: Mapping[str, Any]) -> list[tuple[str, Case]]:
    """A checked pairwise spec's cases, two per prompt (one per variant), each with its prompt's place (`spec.prompts[3]`)."""
    read, _ = read_pairwise(spec)
    assert read is not None, "checked at publish time"
    return [(f"spec.prompts[{index // 2}]", case) for index, case in enumerate(read.prompts)]


CONSUMER = Consumer("pairwise", pairwise_problems, "kindgi-eval run", pairwise_folder, cases=pairwise_cases)
"""What the registry checks a published `spec` of this kind with, and the suite folder it writes it out as."""

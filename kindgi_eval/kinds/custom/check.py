"""The `custom` kind: conversation cases graded, each, by the tenant's own handler, run in a sandbox.

`spec` = `{"handler": {"modulePath", "entrypointPath", "source"}, "cases": [...], "calibration"?: [...]}`, the cases
and calibration items in the conversation format (docs/design.md#cases, docs/design.md#calibration). The handler's
source is carried in the spec: what runs is what was published, immutable and under the version's content hash, and
never a file that could have changed since. The suite is written out as the conversation files and `handler.json`, with
the source's SHA-256 in `registry.json`, which the run checks before it runs a line of it. Pure: reads no file.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from kindgi_eval.registry import (
    CONVERSATION_KEYS,
    Catalogue,
    Consumer,
    FolderContent,
    conversation_cases,
    problem_line,
    read_conversation,
    suite_files,
)
from kindgi_eval.rules import Case, Handler, Problem, problems_from_validation

HANDLER_FILE = "handler.json"
"""A custom suite's handler (`spec.Handler`: module path, entrypoint, source), beside its cases in the folder the
registry writes."""


def read_handler(value: object) -> tuple[Handler | None, list[Problem]]:
    """The handler of a custom spec, or the problems with it (named under `spec.handler`)."""
    if not isinstance(value, dict):
        return None, [
            Problem(
                "spec",
                None,
                "handler",
                'must be an object: {"modulePath": "graders/tone.py", "entrypointPath": "grade", "source": "..."}.',
            )
        ]
    try:
        return Handler.model_validate_json(json.dumps(value)), []
    except ValidationError as e:
        return None, [
            Problem("spec", None, f"handler.{p.field}" if p.field else "handler", p.message)
            for p in problems_from_validation(e, "spec", None)
        ]


def custom_problems(spec: Mapping[str, Any], catalogue: Catalogue) -> list[str]:
    """The `custom` consumer's check: the handler's shape, then the cases as a conversation suite's."""
    problems: list[Problem] = []
    if "handler" not in spec:
        problems.append(
            Problem(
                "spec",
                None,
                "handler",
                'required field is missing. Give {"modulePath", "entrypointPath", "source"}: '
                "the module's path, the function that grades, and the module's source.",
            )
        )
    else:
        problems += read_handler(spec["handler"])[1]
    cases = {k: v for k, v in spec.items() if k != "handler"}
    problems += [
        Problem(
            p.file,
            p.line,
            p.field,
            p.message.replace("A conversation suite's spec holds only", "A custom suite's spec holds handler and"),
        )
        for p in read_conversation(cases).problems
    ]
    return [problem_line(p) for p in problems]


def handler_hash(handler: Handler) -> str:
    """The SHA-256 of the handler's source, as `registry.json` and the run record it."""
    return hashlib.sha256(handler.source.encode("utf-8")).hexdigest()


def custom_folder(spec: Mapping[str, Any], catalogue: Catalogue) -> FolderContent:
    """A custom suite as a folder: its conversation cases, the handler in `handler.json`, its hash in `registry.json`."""
    handler, _ = read_handler(spec["handler"])
    assert handler is not None, "the consumer's check refuses a spec without a valid handler"
    files = suite_files({k: spec[k] for k in CONVERSATION_KEYS if k in spec})
    files[HANDLER_FILE] = (handler.model_dump_json() + "\n").encode("utf-8")
    return FolderContent(files, {"handler_hash": handler_hash(handler)})


def custom_files(spec: Mapping[str, Any]) -> dict[str, bytes]:
    """A custom suite as the files a person edits: its conversation files, and the handler's module at its path."""
    handler, _ = read_handler(spec["handler"])
    assert handler is not None, "a stored version passed the consumer's check"
    return {
        **suite_files({k: spec[k] for k in CONVERSATION_KEYS if k in spec}),
        handler.modulePath: handler.source.encode("utf-8"),
    }


def custom_cases(spec: Mapping[str, Any]) -> list[tuple[str, Case]]:
    """A checked custom spec's cases, each with its place (`spec.cases[3]`)."""
    return conversation_cases({k: spec[k] for k in CONVERSATION_KEYS if k in spec})


CONSUMER = Consumer(
    "custom", custom_problems, "kindgi-eval run", custom_folder, edit_files=custom_files, cases=custom_cases
)
"""What the registry checks a published `spec` of this kind with, and the suite folder it writes it out as."""

"""A custom suite's folder as a run reads it: the handler in `handler.json`, run only if its source is the one
published, and the sandbox this machine must build for it."""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from kindgi_eval.agents import make_sandbox
from kindgi_eval.inputs import (
    REGISTRY_FILE,
    SUITE_FILE_LIMIT,
    FileTooLarge,
    KindFile,
    RegisteredAs,
    RunSettings,
    Suite,
    read_limited,
)
from kindgi_eval.kinds.custom.check import HANDLER_FILE, handler_hash
from kindgi_eval.rules import Handler, Problem

HANDLER_ROW = "handler"
"""The stored suite's row that holds the handler, source and all."""


def read_handler_file(folder: Path, registered: RegisteredAs, problems: list[Problem]) -> tuple[KindFile, ...]:
    """The handler of a custom suite's folder as a row of the stored suite, only if its source's SHA-256 is the one
    `registry.json` records; else nothing, and the problem appended."""
    published = registered.param("handler_hash")
    if not published:
        return ()
    path = folder / HANDLER_FILE
    redo = "Delete the suite's folder; the next run writes it again from the registry."
    try:
        handler = Handler.model_validate_json(read_limited(path, SUITE_FILE_LIMIT, "a suite file"))
    except FileNotFoundError:
        problems.append(
            Problem(str(path), None, None, f"file not found: a custom suite's folder holds its handler. {redo}")
        )
        return ()
    except (OSError, FileTooLarge, ValidationError) as e:
        problems.append(Problem(str(path), None, None, f"is not a custom suite's handler ({e}). {redo}"))
        return ()
    if handler_hash(handler) != published:
        problems.append(
            Problem(
                str(path),
                None,
                "source",
                f"is not the handler's published source (its SHA-256 differs from {REGISTRY_FILE}'s). {redo}",
            )
        )
        return ()
    return (KindFile(HANDLER_ROW, handler.name, handler.model_dump_json()),)


def needs_sandbox(suite: Suite, settings: RunSettings) -> None:
    """A handler runs only in a sandbox this machine can build: InputError saying what it lacks, before the agent is
    asked anything."""
    if any(f.kind == HANDLER_ROW for f in suite.kind_files):
        make_sandbox(settings).close()

"""What a publish's body must be before anything is stored: JSON, a valid suite, the caller's tenant, a kind some
consumer runs, and a `spec` that consumer accepts; and what the files a version was published from must be: texts
that hold exactly its spec; and what a catalogue entry an operator publishes must be. Each refusal with its code. Pure."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from kindgi_eval.inputs import folder_hash
from kindgi_eval.registry.catalogue import ENTRY_NAME_PATTERN, MAX_DESCRIPTION, Catalogue
from kindgi_eval.registry.consumers import Consumers, accepted_kinds
from kindgi_eval.registry.conversation import problem_line, read_conversation, spec_of_files
from kindgi_eval.registry.errors import RegistryError
from kindgi_eval.registry.model import EvalSuite, SuiteFiles, canonical_json, differing_keys, suite_document
from kindgi_eval.registry.semver import is_semver
from kindgi_eval.rules import SuiteLimits, case_problems, problems_from_validation

MAX_BODY = 1024 * 1024
"""The largest publish body, in bytes (1 MiB); a larger one is refused with 413 before it is parsed."""
MAX_PROBLEMS = 50
"""At most this many problems are listed in one refusal; the count of the rest follows."""
_ENTRY_NAME = re.compile(ENTRY_NAME_PATTERN)


def read_suite(
    body: bytes, tenant: str, consumers: Consumers, catalogue: Catalogue, limits: SuiteLimits | None
) -> EvalSuite:
    """The suite a publish body holds, checked in the order a client fixes things: JSON (422), the suite's shape
    (422), its tenant (403), its kind (422 unless one of `consumers` runs it), that consumer's check of `spec` against
    `catalogue` (422), then its cases against the tenant's `limits` (422; None where they are not known, on a client)."""
    data = _json_object(body)
    try:
        suite = EvalSuite.model_validate(data)
    except ValidationError as e:
        raise RegistryError("invalid", _joined(_validation_lines(e, consumers))) from None
    if suite.tenantId != tenant:
        raise RegistryError(
            "forbidden",
            f"tenantId: {suite.tenantId!r} is not your tenant; this token publishes for {tenant!r} "
            "only. Set tenantId to it, or publish with a token of that tenant.",
        )
    consumer = consumers.get(suite.kind)
    if consumer is None:
        raise RegistryError(
            "invalid",
            f"kind: {suite.kind!r} is not a kind installed here: no consumer for it runs on this server. "
            f"This server accepts {_kinds(accepted_kinds(consumers))}.",
        )
    problems = consumer.check(suite.spec, catalogue)
    if problems:
        raise RegistryError(
            "invalid",
            _joined(
                problems,
                f"spec: not {'an' if suite.kind[0] in 'aeiou' else 'a'} {suite.kind} suite {consumer.runs} can run",
            ),
        )
    if limits is not None and consumer.cases is not None:
        placed = consumer.cases(suite.spec)
        over = [
            f"{placed[o.index][0] if o.index < len(placed) else 'spec'}: {o.message}"
            for o in case_problems(limits, [case for _, case in placed])
        ]
        if over:
            raise RegistryError("invalid", _joined(over, f"spec: over the limits of tenant {tenant}'s suites"))
    try:
        canonical_json(suite_document(suite))
    except (ValueError, UnicodeEncodeError) as e:
        raise RegistryError(
            "invalid", f"body: cannot be stored as UTF-8 JSON ({e}). Remove lone surrogates (\\ud800-\\udfff)."
        ) from None
    return suite


def read_files(body: bytes, kind: str, spec: Mapping[str, Any], where: str, consumers: Consumers) -> dict[str, str]:
    """The files a body gives the version `where` (of `kind`, holding `spec`), checked in the order a client fixes
    things: JSON `{"files": {name: text}}`, texts that are UTF-8, a kind published from folders, and texts that hold
    exactly `spec` (however they lay it out); every refusal is 422."""
    try:
        files = SuiteFiles.model_validate(
            _json_object(body, 'the suite files\' texts by name, {"files": {name: text}}')
        ).files
    except ValidationError as e:
        lines = [f"{(p.field or 'body')[:80]}: {p.message}" for p in problems_from_validation(e, "body", None)]
        raise RegistryError("invalid", _joined(lines)) from None
    for name, text in files.items():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as e:
            raise RegistryError(
                "invalid", f"files.{name[:80]}: not UTF-8 text (a lone surrogate at character {e.start})."
            ) from None
    consumer = consumers.get(kind)
    if consumer is None or consumer.read_files is None:
        raise RegistryError(
            "invalid", f"{where}: is of kind {kind}, which keeps no files; only a suite published from a folder does."
        )
    try:
        differ = differing_keys(spec, consumer.read_files(files))
    except UnicodeEncodeError:  # a line's `\ud800` escape: no stored version holds a lone surrogate
        raise RegistryError(
            "invalid",
            f"files: they do not hold what {where} holds (a line holds a lone surrogate, "
            "\\ud800-\\udfff). Send the files it was published from.",
        ) from None
    except ValueError as e:
        raise RegistryError("invalid", f"files: {e}") from None
    except RecursionError:  # a line that only just parsed can be too deep to encode again
        raise RegistryError(
            "invalid", "files: nested too deeply to compare with the version. Flatten the suite."
        ) from None
    if differ:
        raise RegistryError(
            "invalid",
            f"files: they do not hold what {where} holds (they differ in: "
            f"{', '.join(f'spec.{key[:80]}' for key in differ)}). Send the files it was published from.",
        )
    return files


def _json_object(
    body: bytes, what: str = "the suite (id, tenantId, version, kind, description, spec)"
) -> dict[str, Any]:
    """The body as one JSON object with unique names; RegistryError `invalid` saying what is wrong, and that it must be `what`."""
    if not body.strip():
        raise RegistryError("invalid", f"body: empty. Send {what} as one JSON object (Content-Type: application/json).")
    try:
        data = json.loads(body.decode("utf-8"), parse_constant=_no_constant, object_pairs_hook=_unique_names)
    except UnicodeDecodeError as e:
        raise RegistryError("invalid", f"body: not UTF-8 (byte {e.start}). Send the suite as UTF-8 JSON.") from None
    except json.JSONDecodeError as e:
        raise RegistryError("invalid", f"body: not valid JSON: {e.msg} at line {e.lineno} column {e.colno}.") from None
    except ValueError as e:
        raise RegistryError("invalid", f"body: {e}") from None
    except RecursionError:
        raise RegistryError("invalid", "body: nested too deeply to read. Flatten the suite.") from None
    if not isinstance(data, dict):
        raise RegistryError("invalid", f"body: must be one JSON object, {what}.")
    return data


def _unique_names(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object whose names are unique (RFC 7493, I-JSON): with a name given twice, which one a reader keeps is
    each reader's guess (`tenantId` globex, then acme), so the body is refused."""
    found = dict(pairs)
    if len(found) < len(pairs):  # the rare case pays for finding which name it was
        seen: set[str] = set()
        name = next(name for name, _ in pairs if name in seen or seen.add(name))  # type: ignore[func-returns-value]
        raise ValueError(f"the name {name[:80]!r} is given twice in one object; give each name once (RFC 7493).")
    return found


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number. Write a finite number or a string.")


def _validation_lines(error: ValidationError, consumers: Consumers) -> list[str]:
    """pydantic's errors as `field: what` lines (one per error, in order); a kind outside the enum names the kinds
    this server accepts, and a malformed id or version says what one looks like."""
    lines = []
    for e, problem in zip(error.errors(include_url=False), problems_from_validation(error, "body", None), strict=True):
        field, error_type, got = problem.field, e["type"], repr(e.get("input"))[:80]
        if error_type == "missing" or field not in ("kind", "spec", "id", "version"):
            lines.append(f"{field or 'body'}: {problem.message}")
        elif field == "kind":
            lines.append(
                f"kind: {got} is not a kind (a name of lower-case letters, digits and hyphens); this server accepts "
                f"{_kinds(accepted_kinds(consumers))}"
            )
        elif field == "spec":
            lines.append(f"spec: must be a JSON object, the kind's suite body ({problem.message})")
        elif field == "version" and error_type == "string_pattern_mismatch":
            lines.append(
                f"version: {got} is not a semantic version MAJOR.MINOR.PATCH[-PRERELEASE] (no leading zeros, "
                "no +build), e.g. 1.4.0 or 1.4.0-rc.1"
            )
        elif field == "id" and error_type == "string_pattern_mismatch":
            lines.append(
                f"id: {got} is not a suite id: up to 128 letters, digits, dots, hyphens and underscores, "
                "starting with a letter or a digit, e.g. acme.pricing"
            )
        else:
            lines.append(f"{field}: {problem.message}")
    return lines


def _kinds(kinds: tuple[str, ...]) -> str:
    return ", ".join(kinds) if kinds else "no kind at all (no consumer is registered)"


def _joined(lines: list[str], lead: str | None = None) -> str:
    shown = lines[:MAX_PROBLEMS]
    more = f"; and {len(lines) - MAX_PROBLEMS} more" if len(lines) > MAX_PROBLEMS else ""
    count = f"{len(lines)} problem{'s' if len(lines) != 1 else ''}"
    return f"{lead} ({count}): " + "; ".join(shown) + more if lead else "; ".join(shown) + more


class NewEntry(BaseModel):
    """What an operator publishes: `POST /v1/catalogue`."""

    model_config = ConfigDict(extra="forbid", strict=True, title="NewCatalogueEntry")

    name: str
    version: str
    description: str = Field(default="", max_length=MAX_DESCRIPTION)
    files: dict[str, str]
    """The suite folder's texts by name, as a conversation suite holds them: cases.jsonl, and calibration.jsonl."""

    @field_validator("name")
    @classmethod
    def _name(cls, name: str) -> str:
        if not _ENTRY_NAME.fullmatch(name):
            raise ValueError(f"{name[:80]!r} is not an entry name: write owner/suite in lower case, e.g. kindgi/golden")
        return name

    @field_validator("version")
    @classmethod
    def _version(cls, version: str) -> str:
        if len(version) > 64 or not is_semver(version):
            raise ValueError(f"{version[:80]!r} is not a semantic version, e.g. 1.0.0")
        return version


def read_entry(body: bytes) -> tuple[NewEntry, str]:
    """The entry a publish body holds and its content hash, checked in the order a client fixes things: JSON (422),
    the entry's shape (422), files that are a conversation suite's and that it can run (422)."""
    data = _json_object(body, "the catalogue entry (name, version, description, files)")
    try:
        entry = NewEntry.model_validate(data)
    except ValidationError as e:
        raise RegistryError(
            "invalid", _joined([f"{p.field or 'body'}: {p.message}" for p in problems_from_validation(e, "body", None)])
        ) from None
    try:
        files = {name: text.encode("utf-8") for name, text in entry.files.items()}
        spec = spec_of_files(entry.files)
    except UnicodeEncodeError as e:
        raise RegistryError("invalid", f"files: not UTF-8 text (a lone surrogate at character {e.start}).") from None
    except ValueError as e:
        raise RegistryError("invalid", f"files: {e}") from None
    problems = [problem_line(p) for p in read_conversation(spec).problems]
    if problems:
        raise RegistryError("invalid", _joined(problems, "files: not a suite a benchmark can run"))
    return entry, folder_hash(files)

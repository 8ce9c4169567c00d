"""The suite document of the registry (`/v1/eval-suites`, docs/design.md#the-suite-registry), its canonical JSON and content hash, and the API's answers.

Pure: no file, no socket. The committed JSON Schema, `eval-suite.schema.json` beside this module, is generated
from `EvalSuite` by `suite_json_schema`; a test fails when the two differ.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from kindgi_eval.registry.errors import ErrorCode
from kindgi_eval.registry.semver import SEMVER_PATTERN

KIND_PATTERN = r"^[a-z][a-z0-9-]{0,31}$"
"""A kind's name: lower-case letters, digits and hyphens, starting with a letter, at most 32 characters. Which kinds a
server accepts are the kinds installed where it runs (each with its consumer); its `/openapi.json` lists them."""

SUITE_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$"
"""A suite id: letters, digits, dots, hyphens and underscores, starting with a letter or a digit (it is a URL path
segment, so `.` and `..` can never be one), at most 128 characters."""
SCHEMA_FILE = Path(__file__).with_name("eval-suite.schema.json")
"""The committed JSON Schema of `EvalSuite`."""


class EvalSuite(BaseModel):
    """Tenant-scoped evaluation suite definition: the registry shape. `kind` selects the shape of `spec`."""

    model_config = ConfigDict(
        extra="forbid", frozen=True, strict=True, use_attribute_docstrings=True, title="EvalSuite"
    )

    id: str = Field(pattern=SUITE_ID_PATTERN)
    """Stable suite id chosen by the caller, e.g. `acme.drafting-accuracy`; unique within its tenant."""
    tenantId: str = Field(min_length=1, max_length=128)  # the registry's name, camelCase
    """Tenant owning the suite; when published over HTTP it must be the caller's tenant (from the token)."""
    version: str = Field(pattern=SEMVER_PATTERN, max_length=64)
    """Semver `MAJOR.MINOR.PATCH[-PRERELEASE]`; a published version is immutable and each new one is greater."""
    kind: str = Field(pattern=KIND_PATTERN)
    """What the suite evaluates, and so the shape of `spec`: a kind installed where the registry runs."""
    description: str = ""
    """What the suite is for, for a person."""
    spec: dict[str, Any]
    """Kind-specific suite body, an object; for `conversation`: `{"cases": [...], "calibration": [...]}`."""


def suite_document(suite: EvalSuite) -> dict[str, Any]:
    """The suite as the JSON object that is stored, hashed and answered: every field, `description` included."""
    return suite.model_dump(mode="json")


def canonical_json(document: Any) -> bytes:
    """JSON with sorted keys and no insignificant whitespace, UTF-8: the bytes a suite's hash is taken over.

    Raises ValueError on NaN or infinity and UnicodeEncodeError on a lone surrogate, neither of which is JSON text."""
    return json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode(
        "utf-8"
    )


def differing_fields(stored: Mapping[str, Any], sent: Mapping[str, Any]) -> list[str]:
    """The top-level fields in which two suite documents differ, `sent`'s order first; where `spec` is an object on
    both sides, its differing keys are named instead (`spec.cases`). Values compare as their canonical JSON, as the
    hash does (`1` and `1.0` differ); a field present on one side only differs."""
    names = []
    for name in differing_keys(stored, sent):
        inner = stored.get(name), sent.get(name)
        if name == "spec" and all(isinstance(value, Mapping) for value in inner):
            names.extend(f"spec.{key}" for key in differing_keys(*inner))
        else:
            names.append(name)
    return names


def differing_keys(stored: Mapping[str, Any], sent: Mapping[str, Any]) -> list[str]:
    """The keys of two JSON objects whose values differ as canonical JSON, or that only one of them has; `sent`'s
    order, then the keys only `stored` has."""
    keys = [*sent, *(key for key in stored if key not in sent)]
    return [
        key
        for key in keys
        if key not in stored or key not in sent or canonical_json(stored[key]) != canonical_json(sent[key])
    ]


def content_hash(document: Any) -> str:
    """The SHA-256 of the canonical JSON, as 64 hex digits: a version's ETag (quoted) and its `hash`."""
    return hashlib.sha256(canonical_json(document)).hexdigest()


def etag(sha256: str) -> str:
    """The ETag header value of a version: its hash, quoted (a strong validator)."""
    return f'"{sha256}"'


class SuiteVersion(BaseModel):
    """One published version of a suite: the document exactly as stored, and where it came from."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    suite: EvalSuite
    """The suite document, as published."""
    hash: str = Field(pattern=r"^[0-9a-f]{64}$")
    """SHA-256 of the document's canonical JSON (sorted keys, no whitespace, UTF-8); the ETag, unquoted."""
    published_at: str
    """When it was published, UTC, ISO 8601 (`2026-11-30T02:00:00.000000Z`)."""
    published_by: str
    """The id of the token that published it."""


class VersionInfo(BaseModel):
    """A version in a suite's history."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    version: str
    """The version, semver."""
    hash: str
    """SHA-256 of its canonical JSON."""
    published_at: str
    """When it was published, UTC, ISO 8601."""


class VersionList(BaseModel):
    """Every version of one suite, newest (greatest) first."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    data: list[VersionInfo]
    """The versions, newest first."""


class SuiteSummary(BaseModel):
    """A suite in a listing: its latest version, without the body."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    id: str
    """The suite id."""
    version: str
    """Its latest version."""
    kind: str
    """The latest version's kind."""
    description: str
    """The latest version's description, its first 200 characters (the version itself holds it whole)."""
    hash: str
    """SHA-256 of the latest version's canonical JSON."""
    published_at: str
    """When the latest version was published, UTC, ISO 8601."""


class SuiteFiles(BaseModel):
    """The suite files a version was published from, each one's text exactly as it was read (whitespace, blank lines,
    key order, final newline), so a pull writes them back byte for byte."""

    model_config = ConfigDict(extra="forbid", strict=True, use_attribute_docstrings=True)

    files: dict[str, str]
    """Each file's text by its name: `cases.jsonl`, and `calibration.jsonl` when the folder held one."""


class VersionFiles(BaseModel):
    """What a version keeps of the folder it was published from."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    files: dict[str, str] | None
    """Each file's text by its name, as first published; null when no folder's files were given for the version (it
    was published as a JSON document): its files are then its spec's items, one per line."""


class SuitePage(BaseModel):
    """One page of the caller's suites, by id; pass `next` as `after` for the following page."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    data: list[SuiteSummary]
    """The suites of this page, ordered by id."""
    next: str | None
    """The id of this page's last suite, to pass as `after` for the next page; null on the last one."""


class ErrorDetail(BaseModel):
    """What was refused and why."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    code: ErrorCode
    """A stable code a client may branch on."""
    message: str
    """`where: what is wrong. what to do.`, for a person."""


class ErrorBody(BaseModel):
    """The body of every refusal."""

    error: ErrorDetail


class Health(BaseModel):
    """The liveness answer."""

    status: Literal["ok"]


def version_body(document_json: str, sha256: str, published_at: str, published_by: str) -> bytes:
    """The JSON of a `SuiteVersion` around a stored document, byte for byte as stored (no re-encoding)."""
    meta = json.dumps(
        {"hash": sha256, "published_at": published_at, "published_by": published_by}, separators=(",", ":")
    )
    return b'{"suite":' + document_json.encode("utf-8") + b"," + meta[1:].encode("utf-8")


def suite_json_schema() -> dict[str, Any]:
    """The JSON Schema of `EvalSuite`, as committed in `eval-suite.schema.json`: any well-formed kind name, since
    which kinds a server accepts depends on what is installed where it runs (`with_kinds` narrows it to those)."""
    schema = EvalSuite.model_json_schema()
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", **schema}


def with_kinds(schema: Mapping[str, Any], kinds: Sequence[str]) -> dict[str, Any]:
    """A JSON Schema whose `kind` property is narrowed to `kinds`, the kinds a server accepts (the schema of
    `EvalSuite` or of `SuiteSummary`); the rest of it as it was."""
    properties = dict(schema["properties"])
    properties["kind"] = {**properties["kind"], "enum": list(kinds)}
    return {**schema, "properties": properties}


def suite_json_schema_text() -> str:
    """The committed schema file's exact text."""
    return json.dumps(suite_json_schema(), indent=2, ensure_ascii=False) + "\n"

"""The suite document (docs/design.md#the-suite-registry): its fields, its committed JSON Schema, its canonical JSON,
its kinds."""

from __future__ import annotations

import hashlib
import json
import os
import re

import pytest
from pydantic import ValidationError

from kindgi_eval.kinds import consumers
from kindgi_eval.registry import (
    KIND_PATTERN,
    EvalSuite,
    accepted_kinds,
    canonical_json,
    content_hash,
    suite_document,
    suite_json_schema,
    with_kinds,
)
from kindgi_eval.registry.model import SCHEMA_FILE, SUITE_ID_PATTERN, suite_json_schema_text
from kindgi_eval.registry.semver import SEMVER_PATTERN

VALID = {"id": "acme.pricing", "tenantId": "acme", "version": "1.4.0", "kind": "conversation", "spec": {"cases": []}}


def test_the_committed_schema_is_the_generated_one() -> None:
    """Rewrite it on purpose with UPDATE_EXPECTED=1 after changing EvalSuite."""
    if os.environ.get("UPDATE_EXPECTED") == "1":
        SCHEMA_FILE.write_text(suite_json_schema_text())
    assert SCHEMA_FILE.read_text() == suite_json_schema_text(), (
        "eval-suite.schema.json is stale: UPDATE_EXPECTED=1 rewrites it"
    )


def test_the_suite_has_spec_003s_fields_and_no_other() -> None:
    schema = suite_json_schema()
    assert list(schema["properties"]) == ["id", "tenantId", "version", "kind", "description", "spec"]
    assert schema["required"] == ["id", "tenantId", "version", "kind", "spec"]
    assert schema["additionalProperties"] is False
    assert schema["properties"]["spec"]["type"] == "object"
    assert all(p.get("description") for p in schema["properties"].values())  # every field says what it is


def test_the_committed_schema_takes_any_kind_name_and_a_server_narrows_it_to_the_kinds_installed() -> None:
    kind = suite_json_schema()["properties"]["kind"]
    assert kind["pattern"] == KIND_PATTERN and "enum" not in kind
    assert with_kinds(suite_json_schema(), accepted_kinds(consumers()))["properties"]["kind"]["enum"] == [
        "accuracy",
        "benchmark",
        "conversation",
        "custom",
        "human-review",
        "pairwise",
        "regression",
    ]
    for good in ("toy", "human-review", "a" * 32, "k9"):
        assert EvalSuite.model_validate({**VALID, "kind": good}).kind == good  # the server's consumers decide the rest
    for bad in ("Conversation", "9k", "-toy", "a" * 33, "to y", "toy_kind", ""):
        with pytest.raises(ValidationError):
            EvalSuite.model_validate({**VALID, "kind": bad})


def test_the_schemas_patterns_are_the_ones_the_model_applies() -> None:
    properties = suite_json_schema()["properties"]
    assert properties["version"]["pattern"] == SEMVER_PATTERN and properties["id"]["pattern"] == SUITE_ID_PATTERN
    for good in ("a", "acme.drafting-accuracy", "A_1.b-2", "x" * 128):
        assert re.fullmatch(SUITE_ID_PATTERN, good)
    for bad in (".", "..", ".hidden", "-x", "a/b", "a b", "x" * 129, "é"):
        assert not re.fullmatch(SUITE_ID_PATTERN, bad)
        with pytest.raises(ValidationError):
            EvalSuite.model_validate({**VALID, "id": bad})


@pytest.mark.parametrize(
    "change",
    [
        {"extra": 1},
        {"spec": []},
        {"spec": None},
        {"version": 1},
        {"tenantId": ""},
        {"kind": "Conversation"},
        {"description": None},
    ],
)
def test_the_model_refuses(change: dict) -> None:
    with pytest.raises(ValidationError):
        EvalSuite.model_validate({**VALID, **change})


def test_canonical_json_sorts_keys_drops_whitespace_and_writes_utf8() -> None:
    document = suite_document(
        EvalSuite.model_validate({**VALID, "description": "€ 価格", "spec": {"z": 1, "a": [1.5, None]}})
    )
    text = canonical_json(document)
    assert (
        text
        == (
            '{"description":"€ 価格","id":"acme.pricing","kind":"conversation","spec":{"a":[1.5,null],"z":1},'
            '"tenantId":"acme","version":"1.4.0"}'
        ).encode()
    )
    assert content_hash(document) == hashlib.sha256(text).hexdigest()


def test_a_missing_description_hashes_as_the_empty_one() -> None:
    absent = suite_document(EvalSuite.model_validate(VALID))
    empty = suite_document(EvalSuite.model_validate({**VALID, "description": ""}))
    assert absent == empty and content_hash(absent) == content_hash(empty)


def test_canonical_json_refuses_what_is_not_json() -> None:
    with pytest.raises(ValueError):
        canonical_json({"x": float("nan")})
    with pytest.raises(UnicodeEncodeError):
        canonical_json({"x": "\ud800"})
    assert json.loads(canonical_json({"x": "\u0000"})) == {"x": "\u0000"}  # escaped, so any database can hold it

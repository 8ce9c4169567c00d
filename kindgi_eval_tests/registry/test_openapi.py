"""Property-based tests of the served API from its own OpenAPI description (schemathesis), on both backends:
no answer is a 5xx, and every answer has a documented status, content type and body shape."""

from __future__ import annotations

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import content_type_conformance, response_schema_conformance, status_code_conformance

from kindgi_eval.kinds import consumers
from kindgi_eval.registry.app import create_app
from kindgi_eval_tests.registry.conftest import Registry

CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]
EXAMPLES = 40
"""Per operation and backend: eight operations, two backends, about 640 requests in all."""
DESCRIPTION = create_app(store=None, consumers=consumers()).openapi()  # type: ignore[arg-type]  # describing the routes reads no storage
schema = schemathesis.openapi.from_dict(DESCRIPTION)
_TOKENS: dict[str, str] = {}


@pytest.fixture
def token(registry: Registry) -> str:
    """The secret of tenant `acme` on this backend; its suite `acme.pricing` exists, so some reads find something."""
    if registry.backend not in _TOKENS:
        secret = registry.store.issue_token("acme", "schemathesis").secret
        httpx.post(f"{registry.url}/v1/eval-suites", headers={"Authorization": f"Bearer {secret}"}, json={
            "id": "acme.pricing", "tenantId": "acme", "version": "1.0.0", "kind": "conversation",
            "spec": {"cases": [{"id": "a", "text": "hi", "expect": {"escalate": False}}]}})
        _TOKENS[registry.backend] = secret
    return _TOKENS[registry.backend]


def test_the_description_tested_is_the_one_served(registry: Registry) -> None:
    assert httpx.get(f"{registry.url}/openapi.json").json() == DESCRIPTION


@schema.parametrize()
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True, database=None)
def test_no_5xx_and_every_answer_matches_the_description(case: schemathesis.Case, registry: Registry, token: str) -> None:
    if case.method == "POST" and isinstance(case.body, dict):
        _reach_deeper(case)
    case.call_and_validate(base_url=registry.url, headers={"Authorization": f"Bearer {token}"}, checks=CHECKS)


def _reach_deeper(case: schemathesis.Case) -> None:
    """Most generated suites name another tenant (403); two in three are made the caller's `conversation` suites, half
    of those with a runnable spec and no If-Match, so the consumer's check and the storage of arbitrary ids, versions
    and descriptions are reached too."""
    body = case.body
    turn = len(repr(body)) % 3  # deterministic per example
    if turn >= 1:
        body.update(tenantId="acme", kind="conversation")
    if turn == 2:
        body["spec"] = {"cases": [{"id": "a", "text": "hi", "expect": {"escalate": False}}]}
        for name in [h for h in (case.headers or {}) if h.lower() == "if-match"]:
            del case.headers[name]

"""The served API against its own OpenAPI description, on both backends: schemathesis runs every phase (examples,
coverage, fuzzing, the stateful phase that follows the description's links) with every check on, with a publish
token and with a read token, and any failure fails; and the parts of the contract a fuzzer reads, one by one."""

from __future__ import annotations

import copy
import re
from typing import Any

import httpx
import pytest
import schemathesis
from pydantic import ValidationError
from schemathesis.config._checks import POSITIVE_DATA_ACCEPTANCE_EXPECTED_STATUSES
from schemathesis.engine import Status, events, from_schema

from kindgi_eval.kinds import consumers
from kindgi_eval.registry import EvalSuite
from kindgi_eval.registry.app import create_app
from kindgi_eval_tests.registry.conftest import Registry, suite

EXAMPLES = 5
"""Generated cases per operation in the fuzzing phase, and the stateful phase's budget; the coverage phase adds its own
(about 250 a run). Four runs (two backends, two tokens) take about 35 s on a 2-core machine."""
STATEFUL_STEPS = 8
"""Calls in one stateful scenario: a publish, then the reads its answer links to."""
DESCRIPTION = create_app(store=None, consumers=consumers()).openapi()  # type: ignore[arg-type]  # describing the routes reads no storage
_RUNNABLE_SPEC = {"cases": [{"id": "a", "text": "hi", "expect": {"escalate": False}}]}
_TOKENS: dict[str, str] = {}


@pytest.fixture
def token(registry: Registry) -> str:
    """The secret of tenant `acme` on this backend; its suite `acme.pricing` exists, so some reads find something."""
    if registry.backend not in _TOKENS:
        secret = registry.store.issue_token("acme", "schemathesis").secret
        httpx.post(
            f"{registry.url}/v1/eval-suites",
            headers={"Authorization": f"Bearer {secret}"},
            json={
                "id": "acme.pricing",
                "tenantId": "acme",
                "version": "1.0.0",
                "kind": "conversation",
                "spec": _RUNNABLE_SPEC,
            },
        )
        _TOKENS[registry.backend] = secret
    return _TOKENS[registry.backend]


def test_the_description_tested_is_the_one_served(registry: Registry) -> None:
    assert httpx.get(f"{registry.url}/openapi.json").json() == DESCRIPTION


def _config(url: str, secret: str) -> schemathesis.Config:
    # A suite's `spec` is checked by its kind's consumer (an RE2 pattern compiles, a catalogue entry exists, a case's
    # fields), which JSON Schema cannot say: a schema-valid publish may be 422, as the description's 422 says; so may
    # files that do not hold their version's items. And an If-Match that names no stored ETag is 412, whatever its
    # shape, as a version already taken is 409. Everywhere else a schema-valid request is never refused as invalid.
    beyond_the_schema = [*POSITIVE_DATA_ACCEPTANCE_EXPECTED_STATUSES, "412", "422"]
    return schemathesis.Config.from_dict(
        {
            "seed": 7,
            "max-failures": 100,
            "generation": {"max-examples": EXAMPLES, "deterministic": True, "database": "none"},
            "checks": {"enabled": True},
            "phases": {"stateful": {"max-steps": STATEFUL_STEPS}},
            "operations": [
                {
                    "include-operation-id": ["publish", "keep_files", "publish_entry"],
                    "checks": {"positive_data_acceptance": {"expected-statuses": beyond_the_schema}},
                }
            ],
            "headers": {"Authorization": f"Bearer {secret}"},
            "base-url": url,
        }
    )


def _reach_deeper(schema: Any, tenant: str) -> None:
    """A generated suite names some other tenant (403); two in three that are valid by the schema are made the caller's
    `conversation` suites, half of those with a runnable spec and no If-Match, so a publish is stored (201, and 200 when
    repeated), the stateful phase follows its links to a real suite, and the consumer's check is reached too."""

    @schema.hook
    def map_body(context: Any, body: Any) -> Any:
        if context.operation is None or context.operation.label != "POST /v1/eval-suites" or not _is_suite(body):
            return body  # a negative case stays as generated, to be refused
        turn = len(repr(body)) % 3  # deterministic per example
        if turn >= 1:
            body = {**body, "tenantId": tenant, "kind": "conversation"}
        if turn == 2:
            body = {**body, "spec": _RUNNABLE_SPEC}
        return body

    @schema.hook
    def map_headers(context: Any, headers: Any) -> Any:
        if context.operation is not None and context.operation.label == "POST /v1/eval-suites" and headers:
            return {
                name: value for name, value in headers.items() if name.lower() != "if-match" or len(repr(headers)) % 2
            }
        return headers


def _is_suite(body: Any) -> bool:
    try:
        EvalSuite.model_validate(body)
    except ValidationError:
        return False
    return True


def fuzzed(url: str, secret: str, tenant: str) -> tuple[list[str], dict[str, int]]:
    """Every failed check and every error of a whole schemathesis run against `url`, one line each; and how many
    requests each phase sent, and how many publishes were stored."""
    schema = schemathesis.openapi.from_dict(
        copy.deepcopy(DESCRIPTION), config=_config(url, secret)
    )  # it edits what it is given
    _reach_deeper(schema, tenant)
    problems: list[str] = []
    sent: dict[str, int] = {}
    for event in from_schema(schema).execute():
        if isinstance(event, events.ScenarioFinished):
            sent[event.phase.name] = sent.get(event.phase.name, 0) + len(event.recorder.cases)
            for case_id, checks in event.recorder.checks.items():
                for check in checks:
                    if check.status == Status.FAILURE:
                        info = check.failure_info
                        problems.append(
                            f"{event.phase.name} {check.name} {event.recorder.cases[case_id].value.operation.label}: "
                            f"{info.failure.title if info else ''}\n{info.code_sample if info else ''}"
                        )
            for interaction in event.recorder.interactions.values():
                request, answered = interaction.request, interaction.response
                if answered is None or answered.status_code not in (200, 201) or "/v1/eval-suites" not in request.uri:
                    continue
                if request.method == "POST":
                    sent["stored"] = sent.get("stored", 0) + 1
                elif event.phase.name == "STATEFUL_TESTING" and "/v1/eval-suites/" in request.uri:
                    sent["read back"] = sent.get("read back", 0) + 1
        elif isinstance(event, (events.NonFatalError, events.FatalError)):
            problems.append(f"error: {event}")
    return problems, sent


@pytest.mark.parametrize("scope", ["publish", "read"])
def test_a_whole_fuzzer_run_finds_no_fault(registry: Registry, scope: str) -> None:
    tenant = f"fuzz-{scope}-{registry.backend}"
    secret = registry.store.issue_token(tenant, "schemathesis", scope=scope).secret
    problems, sent = fuzzed(registry.url, secret, tenant)
    assert problems == []
    assert {"COVERAGE", "FUZZING", "STATEFUL_TESTING"} <= set(sent), sent  # every phase ran
    if scope == "publish":  # what it published was stored, and the reads its links lead to found real suites
        assert sent.get("stored", 0) > 0 and sent.get("read back", 0) > 0, sent


# the contract as a fuzzer reads it


def _filled(path: str) -> str:
    """A path of the description with every parameter given a value (no such suite: the route still matches)."""
    return path.format(suite_id="acme.pricing", version="1.0.0", owner="kindgi", name="golden")


@pytest.mark.parametrize("path", sorted(DESCRIPTION["paths"]))
@pytest.mark.parametrize("method", ["OPTIONS", "DELETE", "HEAD"])
def test_a_405_names_every_method_of_its_path(registry: Registry, token: str, path: str, method: str) -> None:
    documented = {m.upper() for m in DESCRIPTION["paths"][path]}
    response = httpx.request(method, registry.url + _filled(path), headers={"Authorization": f"Bearer {token}"})
    assert response.status_code == 405, response.text
    allowed = {m.strip() for m in response.headers["allow"].split(",")}
    assert allowed == documented  # FastAPI's routes take no HEAD
    assert method == "HEAD" or response.json()["error"]["code"] == "invalid"  # an answer to HEAD has no body


def _after() -> dict:
    (parameter,) = [p for p in DESCRIPTION["paths"]["/v1/eval-suites"]["get"]["parameters"] if p["name"] == "after"]
    (described,) = [s for s in parameter["schema"]["anyOf"] if s.get("type") == "string"]
    return described


@pytest.mark.parametrize(
    "after",
    [
        "0",
        "a.b-c_d",
        "Z" * 128,
        "acme.pricing",
        "zzz",  # any suite id, given as `next` or not
        "Z" * 129,
        "-a",
        ".a",
        "a b",
        "not a cursor!",
        "é",
        "",
    ],
)  # none is a suite id
def test_the_listing_accepts_exactly_the_after_its_description_describes(
    registry: Registry, caller, after: str
) -> None:
    me = caller()
    for suite_id in ("a.one", "m.two", "z.three"):
        me.http.post("/v1/eval-suites", json=suite(me.tenant, suite_id))
    response = me.http.get("/v1/eval-suites", params={"after": after})
    if re.fullmatch(_after()["pattern"], after):
        assert response.status_code == 200, response.text
        listed = [s["id"] for s in response.json()["data"]]
        everything = [s["id"] for s in me.http.get("/v1/eval-suites").json()["data"]]
        assert listed == everything[len(everything) - len(listed) :]  # the suites after it, in the listing's order
        if registry.backend == "sqlite":  # whose order is the bytes' (PostgreSQL's is its database's collation)
            assert listed == [i for i in everything if i > after]
    else:
        assert response.status_code == 422, response.text


def test_the_next_of_a_page_is_the_id_it_ended_with(registry: Registry, caller) -> None:
    me = caller()
    for suite_id in ("a.one", "b.two", "c.three"):
        me.http.post("/v1/eval-suites", json=suite(me.tenant, suite_id))
    page = me.http.get("/v1/eval-suites", params={"limit": 2}).json()
    assert page["next"] == page["data"][-1]["id"] == "b.two" and re.fullmatch(_after()["pattern"], page["next"])


def _operation(operation_id: str) -> tuple[str, str]:
    (found,) = [
        (method, path)
        for path, methods in DESCRIPTION["paths"].items()
        for method, operation in methods.items()
        if operation.get("operationId") == operation_id
    ]
    return found


def _resolved(expression: str, body: dict) -> str:
    """A link's runtime expression `$response.body#/json/pointer`, read from the answer's body."""
    assert expression.startswith("$response.body#/"), expression
    value = body
    for part in expression.removeprefix("$response.body#/").split("/"):
        value = value[part]
    return value


@pytest.mark.parametrize("status", [201, 200])
def test_a_publish_links_to_the_reads_of_the_version_it_made(registry: Registry, caller, status: int) -> None:
    me = caller()
    document = suite(me.tenant, "links.suite", "2.1.0")
    answer = me.http.post("/v1/eval-suites", json=document)
    if status == 200:  # the same content again: the answer names the version already stored
        answer = me.http.post("/v1/eval-suites", json=document)
    assert answer.status_code == status
    links = DESCRIPTION["paths"]["/v1/eval-suites"]["post"]["responses"][str(status)]["links"]
    assert {_operation(link["operationId"]) for link in links.values()} == {
        ("get", "/v1/eval-suites/{suite_id}"),
        ("get", "/v1/eval-suites/{suite_id}/versions"),
        ("get", "/v1/eval-suites/{suite_id}/versions/{version}"),
    }
    for link in links.values():
        method, path = _operation(link["operationId"])
        read = me.http.request(
            method, path.format(**{name: _resolved(e, answer.json()) for name, e in link["parameters"].items()})
        )
        assert read.status_code == 200, read.text
        body = read.json()
        assert body.get("hash") == answer.json()["hash"] or [v["version"] for v in body["data"]] == ["2.1.0"]

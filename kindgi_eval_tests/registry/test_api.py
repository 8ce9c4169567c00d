"""The registry over real HTTP on 127.0.0.1, on SQLite and on PostgreSQL: every answer
docs/registry.md#the-http-api lists.

Every refusal is checked inside `unchanged(...)`: after it, the stored rows are byte for byte what they were.
"""

from __future__ import annotations

import hashlib
import json
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import httpx
import pytest
import sqlalchemy as sa

from kindgi_eval.kinds import consumers
from kindgi_eval.registry import (
    Consumer,
    EvalSuite,
    FolderContent,
    accepted_kinds,
    canonical_json,
    open_store,
    running_server,
)
from kindgi_eval_tests.registry.conftest import golden_spec, refused, suite, unchanged


def _hash(document: dict) -> str:
    return hashlib.sha256(canonical_json({"description": "", **document})).hexdigest()


# publish, get, versions, list


def test_publish_answers_201_with_the_stored_version_and_its_etag(registry, caller) -> None:
    me = caller()
    document = suite(me.tenant, spec=golden_spec())  # the committed golden suite, both files, as one spec
    response = me.http.post("/v1/eval-suites", json=document)
    assert response.status_code == 201, response.text
    body = response.json()
    assert body["suite"] == document
    assert body["hash"] == _hash(document) and response.headers["etag"] == f'"{_hash(document)}"'
    assert body["published_by"] == me.token_id and body["published_at"].endswith("Z")


def test_the_hash_is_sha256_of_canonical_json(registry, caller) -> None:
    me = caller()
    document = suite(me.tenant, description="Prix en €, 価格")
    body = me.http.post("/v1/eval-suites", content=json.dumps(document, indent=4)).json()
    # sorted keys, no whitespace, UTF-8 (not \u escapes): whatever whitespace the client sent
    canonical = json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    assert body["hash"] == hashlib.sha256(canonical).hexdigest()


def test_get_latest_one_version_and_versions_newest_first(registry, caller) -> None:
    me = caller()
    # published in precedence order; numeric identifiers compare as numbers (beta.2 < beta.11)
    order = ["0.9.0", "1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-beta.2", "1.0.0-beta.11", "1.0.0-rc.1", "1.0.0", "1.10.0"]
    for version in order:
        assert me.http.post("/v1/eval-suites", json=suite(me.tenant, version=version)).status_code == 201
    latest = me.http.get("/v1/eval-suites/acme.pricing")
    assert latest.status_code == 200 and latest.json()["suite"]["version"] == "1.10.0"
    assert latest.headers["etag"] == f'"{latest.json()["hash"]}"'
    one = me.http.get("/v1/eval-suites/acme.pricing/versions/1.0.0-beta.2")
    assert one.json()["suite"]["version"] == "1.0.0-beta.2" and one.headers["etag"] == f'"{one.json()["hash"]}"'
    versions = me.http.get("/v1/eval-suites/acme.pricing/versions").json()["data"]
    assert [v["version"] for v in versions] == order[::-1]
    assert set(versions[0]) == {"version", "hash", "published_at"}


def test_list_pages_through_the_latest_version_of_each_suite(registry, caller) -> None:
    me = caller()
    for suite_id in ("e.five", "a.one", "c.three", "b.two", "d.four"):
        me.http.post("/v1/eval-suites", json=suite(me.tenant, suite_id))
    me.http.post("/v1/eval-suites", json=suite(me.tenant, "a.one", "2.0.0", description="second"))
    pages, cursor = [], None
    while True:
        page = me.http.get("/v1/eval-suites", params={"limit": 2, **({"after": cursor} if cursor else {})}).json()
        pages.append([(s["id"], s["version"]) for s in page["data"]])
        cursor = page["next"]
        if cursor is None:
            break
    assert pages == [
        [("a.one", "2.0.0"), ("b.two", "1.0.0")],
        [("c.three", "1.0.0"), ("d.four", "1.0.0")],
        [("e.five", "1.0.0")],
    ]
    first = me.http.get("/v1/eval-suites").json()["data"][0]
    assert first["description"] == "second" and first["kind"] == "conversation" and "spec" not in first


@pytest.mark.parametrize("query", [{"limit": 0}, {"limit": 101}, {"limit": "many"}, {"after": "not a cursor!"}])
def test_bad_paging_is_422(registry, caller, query) -> None:
    refused(caller().http.get("/v1/eval-suites", params=query), 422, "invalid")


def test_healthz_and_openapi_need_no_token(registry) -> None:
    assert httpx.get(f"{registry.url}/healthz").json() == {"status": "ok"}
    description = httpx.get(f"{registry.url}/openapi.json").json()
    assert {
        "/v1/eval-suites",
        "/v1/eval-suites/{suite_id}",
        "/v1/eval-suites/{suite_id}/versions",
        "/v1/eval-suites/{suite_id}/versions/{version}",
        "/v1/eval-suites/{suite_id}/versions/{version}/files",
        "/v1/catalogue",
        "/v1/catalogue/{owner}/{name}/versions/{version}",
        "/healthz",
    } == set(description["paths"])


# tenants: the tenant comes from the token


def test_cross_tenant_publish_is_403(registry, caller) -> None:
    me, other = caller(), caller()
    with unchanged(registry.store):
        message = refused(me.http.post("/v1/eval-suites", json=suite(other.tenant)), 403, "forbidden")
    assert other.tenant in message and me.tenant in message


def test_cross_tenant_read_is_404_as_if_it_did_not_exist(registry, caller) -> None:
    owner, other = caller(), caller()
    owner.http.post("/v1/eval-suites", json=suite(owner.tenant, "secret.suite"))
    for path in (
        "/v1/eval-suites/secret.suite",
        "/v1/eval-suites/secret.suite/versions",
        "/v1/eval-suites/secret.suite/versions/1.0.0",
    ):
        theirs, nobodys = other.http.get(path), other.http.get(path.replace("secret.suite", "no.such"))
        assert refused(theirs, 404, "not_found") == refused(nobodys, 404, "not_found").replace(
            "no.such", "secret.suite"
        )
    assert other.http.get("/v1/eval-suites").json() == {"data": [], "next": None}


def test_two_tenants_may_use_one_suite_id(registry, caller) -> None:
    a, b = caller(), caller()
    assert a.http.post("/v1/eval-suites", json=suite(a.tenant, version="3.0.0")).status_code == 201
    assert b.http.post("/v1/eval-suites", json=suite(b.tenant, version="1.0.0")).status_code == 201
    assert a.http.get("/v1/eval-suites/acme.pricing").json()["suite"]["tenantId"] == a.tenant
    assert b.http.get("/v1/eval-suites/acme.pricing").json()["suite"]["version"] == "1.0.0"


@pytest.mark.parametrize(
    "authorization",
    [None, "", "Bearer", "Basic dXNlcjpwYXNz", "Bearer not-a-token", "Bearer kgi_" + "A" * 43, "bearer  kgi_short"],
    ids=["missing", "empty", "no-token", "basic", "malformed", "unknown", "short"],
)
def test_missing_malformed_or_unknown_token_is_401(registry, caller, authorization) -> None:
    me = caller()
    headers = {} if authorization is None else {"Authorization": authorization}
    with unchanged(registry.store):
        for response in (
            httpx.post(f"{registry.url}/v1/eval-suites", json=suite(me.tenant), headers=headers),
            httpx.get(f"{registry.url}/v1/eval-suites", headers=headers),
            httpx.get(f"{registry.url}/v1/eval-suites/acme.pricing", headers=headers),
        ):
            refused(response, 401, "unauthorized")
            assert response.headers["www-authenticate"].startswith("Bearer")


def test_a_revoked_token_is_401_at_once(registry, caller) -> None:
    me = caller()
    assert me.http.post("/v1/eval-suites", json=suite(me.tenant)).status_code == 201
    registry.store.revoke_token(me.token_id)
    with unchanged(registry.store):
        message = refused(me.http.post("/v1/eval-suites", json=suite(me.tenant, version="2.0.0")), 401, "unauthorized")
        refused(me.http.get("/v1/eval-suites/acme.pricing"), 401, "unauthorized")
    assert "revoked" in message and me.token_id in message


def test_tokens_are_stored_hashed_and_record_their_last_use(registry, caller) -> None:
    me = caller()
    before = next(t for t in registry.store.list_tokens() if t.id == me.token_id)
    assert before.last_used_at is None and before.tenant == me.tenant
    me.http.get("/v1/eval-suites")
    after = next(t for t in registry.store.list_tokens() if t.id == me.token_id)
    assert after.last_used_at is not None and after.revoked_at is None
    from kindgi_eval_tests.registry.conftest import rows

    assert me.secret.encode() not in rows(registry.store)
    assert hashlib.sha256(me.secret.encode()).hexdigest().encode() in rows(registry.store)


# immutable versions


def test_identical_republish_answers_200_with_the_stored_version(registry, caller) -> None:
    me = caller()
    first = me.http.post("/v1/eval-suites", json=suite(me.tenant))
    with unchanged(registry.store):
        again = me.http.post(
            "/v1/eval-suites", content=json.dumps(suite(me.tenant), indent=2)
        )  # same content, other bytes
    assert (
        again.status_code == 200 and again.content == first.content and again.headers["etag"] == first.headers["etag"]
    )


def test_other_content_under_a_published_version_is_409(registry, caller) -> None:
    me = caller()
    me.http.post("/v1/eval-suites", json=suite(me.tenant))
    with unchanged(registry.store):
        message = refused(
            me.http.post("/v1/eval-suites", json=suite(me.tenant, description="changed")), 409, "conflict"
        )
    assert "1.0.0" in message


@pytest.mark.parametrize("version", ["1.1.9", "1.2.0", "1.2.0-rc.1", "0.1.0"])
def test_a_version_not_greater_than_the_latest_is_409(registry, caller, version) -> None:
    me = caller()
    me.http.post("/v1/eval-suites", json=suite(me.tenant, version="1.0.0"))
    me.http.post("/v1/eval-suites", json=suite(me.tenant, version="1.2.0"))
    with unchanged(registry.store):
        message = refused(
            me.http.post("/v1/eval-suites", json=suite(me.tenant, version=version, description="x")), 409, "conflict"
        )
    assert "1.2.0" in message


def test_a_suite_id_keeps_its_kind_for_life_409(registry, caller) -> None:
    me = caller()
    conversation = {"cases": [{"id": "c", "text": "hi", "expect": {"escalate": False}}]}
    accuracy = {"cases": [{"input": "price?", "expectedOutput": "$450"}]}
    created = me.http.post("/v1/eval-suites", json=suite(me.tenant, version="1.1.0", kind="accuracy", spec=accuracy))
    assert created.status_code == 201, created.text
    with unchanged(registry.store):
        message = refused(
            me.http.post(
                "/v1/eval-suites", json=suite(me.tenant, version="2.0.0", kind="conversation", spec=conversation)
            ),
            409,
            "conflict",
        )
    assert "is a 'accuracy' suite, and a suite id keeps its kind" in message


def test_an_id_that_would_share_another_id_s_partition_is_409_naming_it(registry, caller) -> None:
    me = caller()
    first = me.http.post("/v1/eval-suites", json=suite(me.tenant, suite_id=f"{me.tenant}.pricing"))
    assert first.status_code == 201, first.text
    with unchanged(registry.store):
        message = refused(
            me.http.post("/v1/eval-suites", json=suite(me.tenant, suite_id=f"{me.tenant}.Pricing")), 409, "conflict"
        )
    assert f"would share the partition '{me.tenant}@{me.tenant}.pricing' with suite '{me.tenant}.pricing'" in message
    # another tenant's id is no clash: partitions are per tenant
    other = caller()
    assert (
        other.http.post("/v1/eval-suites", json=suite(other.tenant, suite_id=f"{me.tenant}.Pricing")).status_code == 201
    )


def test_an_older_version_republished_identically_is_still_200(registry, caller) -> None:
    me = caller()
    me.http.post("/v1/eval-suites", json=suite(me.tenant, version="1.0.0"))
    me.http.post("/v1/eval-suites", json=suite(me.tenant, version="2.0.0"))
    with unchanged(registry.store):
        assert me.http.post("/v1/eval-suites", json=suite(me.tenant, version="1.0.0")).status_code == 200


def race(registry, me, documents: list[dict]) -> list[int]:
    """Each document published at once, from a thread and a connection of its own; the statuses, sorted."""
    answers: list[int] = []

    def publish(document: dict) -> None:
        with httpx.Client(base_url=registry.url, headers=me.http.headers, timeout=30) as http:
            answers.append(http.post("/v1/eval-suites", json=document).status_code)

    threads = [threading.Thread(target=publish, args=(document,)) for document in documents]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sorted(answers)


def test_concurrent_publishes_of_one_version_store_exactly_one(registry, caller) -> None:
    me = caller()
    answers = race(registry, me, [suite(me.tenant, description=f"racer {n % 2}") for n in range(8)])
    # one racer content wins: its 3 twins are 200 (identical), the other content's 4 are 409
    assert answers == [200, 200, 200, 201, 409, 409, 409, 409]
    assert len(me.http.get("/v1/eval-suites/acme.pricing/versions").json()["data"]) == 1


def test_concurrent_publishes_of_ids_that_differ_in_case_store_exactly_one(registry, caller) -> None:
    # the check and the insert race on PostgreSQL's read committed; the unique index on the lower-case id settles it
    me = caller()
    ids = [f"{me.tenant}.Pricing" if n % 2 else f"{me.tenant}.pricing" for n in range(8)]
    assert race(registry, me, [suite(me.tenant, suite_id=suite_id) for suite_id in ids]) == [
        200,
        200,
        200,
        201,
        409,
        409,
        409,
        409,
    ]
    assert len(me.http.get("/v1/eval-suites").json()["data"]) == 1


def test_a_publish_of_the_same_id_committed_during_the_clash_check_is_answered_as_a_repeat(postgres_url) -> None:
    # read committed: each statement sees what committed before it, so the case check of a new id can see a row
    # for that very id that the transaction's first read did not; that is a repeat of the same content (200), not
    # another id's partition (409)
    first, second = open_store(postgres_url), open_store(postgres_url)
    tenant = f"t-{uuid.uuid4().hex[:10]}"
    document = EvalSuite.model_validate(suite(tenant), strict=False)
    me, twin = (first.issue_token(tenant, name).id for name in ("me", "twin"))
    raced: list[int] = []

    def commit_a_twin_first(conn, cursor, statement, parameters, context, executemany) -> None:
        if "lower(" in statement and not raced:
            raced.append(second.publish(tenant, twin, document).status)

    sa.event.listen(first.engine, "before_cursor_execute", commit_a_twin_first)
    try:
        assert first.publish(tenant, me, document).status == 200
        assert raced == [201]
    finally:
        first.close()
        second.close()


# what a body must be


@pytest.mark.parametrize(
    ("change", "names"),
    [
        ({"kind": "evaluation"}, ["kind", "conversation"]),  # unknown kind: the message names the kinds accepted here
        ({"spec": ["not", "an", "object"]}, ["spec", "object"]),
        ({"spec": "cases"}, ["spec", "object"]),
        ({"version": "1.0"}, ["version"]),
        ({"version": "1.0.0+build.5"}, ["version", "+build"]),
        ({"version": "01.0.0"}, ["version"]),
        ({"id": "../etc"}, ["id"]),
        ({"extra": True}, ["extra", "unknown field"]),
        ({"description": None}, ["description"]),
    ],
    ids=[
        "unknown-kind",
        "spec-list",
        "spec-string",
        "short-version",
        "build-metadata",
        "leading-zero",
        "bad-id",
        "extra-field",
        "null-description",
    ],
)
def test_an_invalid_suite_is_422_naming_the_field(registry, caller, change, names) -> None:
    me = caller()
    with unchanged(registry.store):
        message = refused(me.http.post("/v1/eval-suites", json={**suite(me.tenant), **change}), 422, "invalid")
    for name in names:
        assert name in message


def test_a_missing_field_is_422(registry, caller) -> None:
    me = caller()
    document = suite(me.tenant)
    del document["spec"]
    with unchanged(registry.store):
        assert "spec: required field is missing" in refused(
            me.http.post("/v1/eval-suites", json=document), 422, "invalid"
        )


@contextmanager
def served(registry, table) -> Iterator[str]:
    """A second server over the registry's storage, given `table` as its consumers: a build with other kinds."""
    with running_server(registry.store, table) as server:
        yield server.url


def post(url: str, me, document: dict) -> httpx.Response:
    return httpx.post(
        f"{url}/v1/eval-suites", json=document, headers={"Authorization": f"Bearer {me.secret}"}, timeout=30
    )


def test_a_kind_without_a_consumer_is_refused_422_naming_the_accepted_kinds(registry, caller) -> None:
    me = caller()
    without_pairwise = {kind: c for kind, c in consumers().items() if kind != "pairwise"}
    with served(registry, without_pairwise) as url, unchanged(registry.store):
        message = refused(post(url, me, suite(me.tenant, kind="pairwise", spec={"prompts": []})), 422, "invalid")
    assert (
        "'pairwise'" in message
        and f"accepts {', '.join(accepted_kinds(without_pairwise))}" in message
        and "pairwise," not in message
    )


def _toy_check(
    spec, _
) -> list[str]:  # module-level: a server's consumers are handed to the process that checks publishes
    return [] if "prompts" in spec else ["spec.prompts: required."]


def _toy_folder(spec, _) -> FolderContent:
    return FolderContent({}, {})


def test_a_kind_is_accepted_by_a_server_given_its_consumer(registry, caller) -> None:
    me = caller()
    pairwise = suite(me.tenant, "acme.pairwise", kind="pairwise", spec={"prompts": ["2+2"]})
    toy = Consumer("pairwise", _toy_check, "a test", _toy_folder)
    with served(registry, {"conversation": consumers()["conversation"], "pairwise": toy}) as url:
        assert post(url, me, pairwise).status_code == 201
        message = refused(post(url, me, {**pairwise, "version": "2.0.0", "spec": {}}), 422, "invalid")
        assert "spec.prompts: required." in message
    with served(registry, {"conversation": consumers()["conversation"]}) as url:
        message = refused(post(url, me, {**pairwise, "version": "3.0.0"}), 422, "invalid")
    assert "'pairwise'" in message


def test_an_invalid_conversation_spec_is_422_naming_the_case_and_field(registry, caller) -> None:
    me = caller()
    spec = golden_spec()
    spec["cases"][3] = {**spec["cases"][3], "must_contains": ["typo"]}
    spec["calibration"][1] = {**spec["calibration"][1], "label": "maybe"}
    with unchanged(registry.store):
        message = refused(me.http.post("/v1/eval-suites", json=suite(me.tenant, spec=spec)), 422, "invalid")
    assert "spec.cases[3].must_contains: unknown field" in message
    assert "spec.calibration[1].label:" in message


@pytest.mark.parametrize(
    ("spec", "said"),
    [
        ({}, "spec.cases: required field is missing"),
        ({"cases": []}, "spec.cases: holds no cases"),
        ({"cases": {"id": "a"}}, "spec.cases: must be a list of case objects"),
        ({"cases": [1]}, "spec.cases[0]: each item must be one JSON object"),
        (
            {"cases": [{"id": "a", "text": "t", "expect": {"escalate": False}}] * 2},
            "spec.cases[1].id: duplicate id 'a', first used as cases[0]",
        ),
        (
            {"cases": [{"id": "a", "text": "t", "expect": {"escalate": False}}], "notes": "x"},
            "spec.notes: unknown field",
        ),
    ],
)
def test_conversation_spec_shapes_are_refused_with_their_path(registry, caller, spec, said) -> None:
    me = caller()
    with unchanged(registry.store):
        assert said in refused(me.http.post("/v1/eval-suites", json=suite(me.tenant, spec=spec)), 422, "invalid")


@pytest.mark.parametrize(
    "body",
    [b"", b"{", b"[]", b'"suite"', b"\xff\xfe{}", b'{"id": NaN}', b"[" * 100_000, b'{"id":"a\\ud800","tenantId":"x"}'],
    ids=["empty", "truncated", "array", "string", "not-utf8", "nan", "deep", "lone-surrogate"],
)
def test_a_body_that_is_not_a_suite_object_is_422_never_500(registry, caller, body) -> None:
    me = caller()
    with unchanged(registry.store):
        refused(
            me.http.post("/v1/eval-suites", content=body, headers={"Content-Type": "application/json"}), 422, "invalid"
        )


def test_a_lone_surrogate_inside_a_valid_suite_is_422(registry, caller) -> None:
    me = caller()
    body = json.dumps(suite(me.tenant, description="\ud800"))  # json.dumps writes it as the escape \ud800
    with unchanged(registry.store):
        refused(me.http.post("/v1/eval-suites", content=body), 422, "invalid")


def test_a_nul_character_is_stored_and_answered(registry, caller) -> None:
    me = caller()
    document = suite(me.tenant, description="a\u0000b")  # PostgreSQL text cannot hold NUL; canonical JSON escapes it
    assert me.http.post("/v1/eval-suites", json=document).status_code == 201
    assert me.http.get("/v1/eval-suites/acme.pricing").json()["suite"]["description"] == "a\u0000b"
    assert me.http.get("/v1/eval-suites").json()["data"][0]["description"] == "a\u0000b"  # and listed from its column
    spec = {"cases": [{"id": "nul", "text": "x\u0000y", "expect": {"escalate": False}}]}
    assert me.http.post("/v1/eval-suites", json=suite(me.tenant, version="1.1.0", spec=spec)).status_code == 201
    assert me.http.get("/v1/eval-suites/acme.pricing").json()["suite"]["spec"]["cases"][0]["text"] == "x\u0000y"


def test_a_body_over_1_mib_is_413(registry, caller) -> None:
    me = caller()
    padding = "x" * (1024 * 1024)
    big = json.dumps(suite(me.tenant, description=padding)).encode()
    with unchanged(registry.store):
        refused(me.http.post("/v1/eval-suites", content=big), 413, "too_large")

        def chunks() -> Iterator[bytes]:  # no Content-Length: counted as it arrives
            for start in range(0, len(big), 65536):
                yield big[start : start + 65536]

        refused(me.http.post("/v1/eval-suites", content=chunks()), 413, "too_large")
    exactly = suite(me.tenant)
    exactly["description"] = "x" * (1024 * 1024 - len(json.dumps(exactly).encode()) + len('"Pricing questions"') - 2)
    assert len(json.dumps(exactly).encode()) == 1024 * 1024
    assert me.http.post("/v1/eval-suites", content=json.dumps(exactly)).status_code == 201  # 1 MiB itself is allowed


# conditional and idempotent publishing


def test_if_match_not_the_latest_etag_is_412(registry, caller) -> None:
    me = caller()
    with unchanged(registry.store):  # no version yet: no ETag can match
        refused(
            me.http.post("/v1/eval-suites", json=suite(me.tenant), headers={"If-Match": "*"}),
            412,
            "precondition_failed",
        )
    first = me.http.post("/v1/eval-suites", json=suite(me.tenant))
    second = me.http.post(
        "/v1/eval-suites", json=suite(me.tenant, version="1.1.0"), headers={"If-Match": first.headers["etag"]}
    )
    assert second.status_code == 201
    with unchanged(registry.store):
        for stale in (first.headers["etag"], "W/" + second.headers["etag"], '"0000"'):
            message = refused(
                me.http.post("/v1/eval-suites", json=suite(me.tenant, version="1.2.0"), headers={"If-Match": stale}),
                412,
                "precondition_failed",
            )
            assert second.headers["etag"] in message
    latest = second
    for n, holds in enumerate(("{}", '"x", {}', "*")):  # the latest's ETag, alone or in a list; or any version at all
        answer = me.http.post(
            "/v1/eval-suites",
            json=suite(me.tenant, version=f"1.3.{n}"),
            headers={"If-Match": holds.format(latest.headers["etag"])},
        )
        assert answer.status_code == 201, answer.text
        latest = answer


def test_idempotency_key_replays_the_first_answer(registry, caller) -> None:
    me = caller()
    key = {"Idempotency-Key": "publish-acme-pricing-1.0.0"}
    first = me.http.post("/v1/eval-suites", json=suite(me.tenant), headers=key)
    with unchanged(registry.store):
        again = me.http.post("/v1/eval-suites", json=suite(me.tenant), headers=key)
    assert (again.status_code, again.content, again.headers["etag"]) == (201, first.content, first.headers["etag"])
    assert again.headers["idempotent-replayed"] == "true"
    # the replay answers first, even after a later version made an If-Match stale
    me.http.post("/v1/eval-suites", json=suite(me.tenant, version="2.0.0"))
    assert (
        me.http.post("/v1/eval-suites", json=suite(me.tenant), headers={**key, "If-Match": '"stale"'}).status_code
        == 201
    )


def test_idempotency_key_with_another_body_is_422(registry, caller) -> None:
    me = caller()
    key = {"Idempotency-Key": "k-1"}
    me.http.post("/v1/eval-suites", json=suite(me.tenant), headers=key)
    with unchanged(registry.store):
        message = refused(
            me.http.post("/v1/eval-suites", json=suite(me.tenant, version="1.1.0"), headers=key), 422, "invalid"
        )
    assert "Idempotency-Key" in message


def test_idempotency_keys_belong_to_a_tenant(registry, caller) -> None:
    a, b = caller(), caller()
    key = {"Idempotency-Key": "shared-key"}
    assert a.http.post("/v1/eval-suites", json=suite(a.tenant), headers=key).status_code == 201
    assert b.http.post("/v1/eval-suites", json=suite(b.tenant), headers=key).status_code == 201


def test_a_refused_publish_keeps_no_idempotency_key(registry, caller) -> None:
    me = caller()
    key = {"Idempotency-Key": "k-2"}
    with unchanged(registry.store):
        refused(me.http.post("/v1/eval-suites", json=suite(me.tenant, kind="custom"), headers=key), 422, "invalid")
    assert me.http.post("/v1/eval-suites", json=suite(me.tenant), headers=key).status_code == 201


def test_unknown_routes_and_methods_answer_the_error_shape(registry, caller) -> None:
    me = caller()
    with unchanged(registry.store):
        refused(me.http.get("/v2/eval-suites"), 404, "not_found")
        refused(me.http.delete("/v1/eval-suites/acme.pricing"), 405, "invalid")


def test_a_name_given_twice_in_one_object_is_refused_422(registry, caller) -> None:
    me = caller()
    body = json.dumps(suite(me.tenant))[:-1] + ', "tenantId": "globex"}'  # tenantId mine, then another's
    with unchanged(registry.store):
        message = refused(
            me.http.post("/v1/eval-suites", content=body, headers={"Content-Type": "application/json"}), 422, "invalid"
        )
    assert "the name 'tenantId' is given twice in one object" in message
    nested = json.dumps(suite(me.tenant)).replace(
        '"must_contain": ["\\u20ac"]', '"must_contain": ["a"], "must_contain": ["b"]'
    )
    assert nested.count("must_contain") == 2
    with unchanged(registry.store):
        refused(
            me.http.post("/v1/eval-suites", content=nested, headers={"Content-Type": "application/json"}),
            422,
            "invalid",
        )


def test_an_error_quoting_a_lone_surrogate_is_still_a_json_answer(registry, caller) -> None:
    me = caller()
    body = json.dumps(suite(me.tenant)).replace(
        '"spec": {', '"spec": {"ca\\ud800ses": 1, '
    )  # an unknown key, quoted back
    with unchanged(registry.store):
        response = me.http.post("/v1/eval-suites", content=body, headers={"Content-Type": "application/json"})
    message = refused(response, 422, "invalid")
    assert "ca\ufffdses" in message


def test_a_listing_answers_from_columns_with_descriptions_clipped(registry, caller) -> None:
    me = caller()
    long = "A description a tenant made long. " * 25_000  # about 850 KB, under the 1 MiB body limit
    for n in range(3):
        assert (
            me.http.post("/v1/eval-suites", json=suite(me.tenant, f"{me.tenant}.s{n}", description=long)).status_code
            == 201
        )
    page = me.http.get("/v1/eval-suites", params={"limit": 100})
    assert page.status_code == 200 and len(page.content) < 4096  # three suites, not 2.5 MB of descriptions
    assert [s["description"] for s in page.json()["data"]] == [long[:200]] * 3
    assert (
        me.http.get(f"/v1/eval-suites/{me.tenant}.s0").json()["suite"]["description"] == long
    )  # the version holds it whole

"""The shared catalogue of standard suites, through real HTTP on both backends: every tenant reads it, only an
operator's token publishes to it (a tenant's gets 403), its entries are immutable and versioned like suites, the
packaged golden set is its first entry, seeded once, and a benchmark suite is checked against what it holds."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable

import httpx
import pytest

from kindgi_eval.inputs import CATALOGUE_SEED, folder_hash
from kindgi_eval.registry import EntryInfo, RegistryStore, listing, open_store
from kindgi_eval.rules import InputError
from kindgi_eval_tests.conftest import GOLDEN
from kindgi_eval_tests.registry.conftest import Registry, golden_spec, refused, suite, unchanged

PINNED = "779e99baa7ad1c8d68d3f086eefc3af82bc21876ad7f27da72bd459cbae09d6f"


@pytest.fixture
def operator(registry: Registry) -> Callable[[], httpx.Client]:
    """Clients carrying a new operator token each."""
    clients: list[httpx.Client] = []

    def make() -> httpx.Client:
        token = registry.store.issue_token(None, "catalogue", "operator")
        clients.append(
            httpx.Client(base_url=registry.url, headers={"Authorization": f"Bearer {token.secret}"}, timeout=30)
        )
        return clients[-1]

    yield make
    for client in clients:
        client.close()


def files(cases: int = 2, calibration: bool = True) -> dict[str, str]:
    """A small conversation suite's files, as texts."""
    spec = golden_spec()
    texts = {"cases.jsonl": "".join(json.dumps(c) + "\n" for c in spec["cases"][:cases])}
    if calibration:
        texts["calibration.jsonl"] = "".join(json.dumps(c) + "\n" for c in spec["calibration"][:2])
    return texts


def entry(name: str, version: str = "1.0.0", **fields) -> dict:
    return {"name": name, "version": version, "description": "A standard suite", "files": files(), **fields}


def new_name() -> str:
    return f"ops/s-{uuid.uuid4().hex[:10]}"


def test_every_token_reads_the_catalogue_seeded_with_the_packaged_golden_set(registry, caller) -> None:
    reader = caller()
    listed = reader.http.get("/v1/catalogue")
    assert listed.status_code == 200
    (golden,) = [e for e in listed.json()["data"] if e["name"] == "kindgi/golden"]
    assert golden["version"] == "1.0.0" and golden["hash"] == PINNED and golden["published_by"] == "package"
    assert "files" not in golden  # a listing reads no files
    found = reader.http.get("/v1/catalogue/kindgi/golden/versions/1.0.0").json()
    assert {name: text.encode() for name, text in found["files"].items()} == {
        name: (GOLDEN / name).read_bytes() for name in ("cases.jsonl", "calibration.jsonl")
    }
    assert folder_hash({name: text.encode() for name, text in found["files"].items()}) == PINNED
    missing = refused(reader.http.get("/v1/catalogue/kindgi/golden/versions/9.9.9"), 404, "not_found")
    assert "'kindgi/golden' '9.9.9': the catalogue holds no such entry" in missing
    refused(httpx.get(f"{registry.url}/v1/catalogue"), 401, "unauthorized")


def test_the_seed_is_added_once_however_often_the_database_is_opened(registry) -> None:
    again = open_store(str(registry.store.engine.url.render_as_string(hide_password=False)))
    try:
        seeded = [e for e in again.catalogue_entries() if e.name == CATALOGUE_SEED.name]
    finally:
        again.close()
    assert [(e.version, e.hash) for e in seeded] == [("1.0.0", CATALOGUE_SEED.sha256)]


def test_an_operator_publishes_an_entry_every_tenant_then_reads(registry, caller, operator) -> None:
    name = new_name()
    ops = operator()
    added = ops.post("/v1/catalogue", json=entry(name))
    assert added.status_code == 201, added.text
    body = added.json()
    assert body["hash"] == folder_hash({n: t.encode() for n, t in files().items()}) and body["files"] == files()
    assert ops.post("/v1/catalogue", json=entry(name)).status_code == 200  # the same content again is a repeat
    for tenant in (caller(), caller()):
        assert (name, "1.0.0") in [(e["name"], e["version"]) for e in tenant.http.get("/v1/catalogue").json()["data"]]
        assert tenant.http.get(f"/v1/catalogue/{name}/versions/1.0.0").json()["files"] == files()


def test_an_entry_never_changes_and_each_new_version_is_greater(registry, operator) -> None:
    name, ops = new_name(), operator()
    assert ops.post("/v1/catalogue", json=entry(name, "1.1.0")).status_code == 201
    with unchanged(registry.store):
        other = refused(ops.post("/v1/catalogue", json=entry(name, "1.1.0", files=files(cases=3))), 409, "conflict")
        older = refused(ops.post("/v1/catalogue", json=entry(name, "1.0.9", files=files(cases=3))), 409, "conflict")
    assert f"catalogue entry {name} 1.1.0: already published with other content" in other
    assert "not greater than the newest version" in older and "1.1.0" in older
    assert ops.post("/v1/catalogue", json=entry(name, "2.0.0", files=files(cases=3))).status_code == 201
    listed = [(e["name"], e["version"]) for e in ops.get("/v1/catalogue").json()["data"] if e["name"] == name]
    assert listed == [(name, "2.0.0"), (name, "1.1.0")]  # the newest version first


def test_no_tenant_token_may_write_the_catalogue(registry, caller) -> None:
    publisher = caller()
    reader_token = registry.store.issue_token(publisher.tenant, "nightly", "read")
    reader = httpx.Client(base_url=registry.url, headers={"Authorization": f"Bearer {reader_token.secret}"}, timeout=30)
    with unchanged(registry.store):
        said = refused(publisher.http.post("/v1/catalogue", json=entry(new_name())), 403, "forbidden")
        assert (
            "has scope 'publish'" in said and "cannot publish to the catalogue" in said and "--scope operator" in said
        )
        said = refused(reader.post("/v1/catalogue", json=entry(new_name())), 403, "forbidden")
        assert "has scope 'read'" in said
    reader.close()


def test_an_operator_token_acts_for_no_tenant(registry, operator) -> None:
    ops = operator()
    with unchanged(registry.store):
        said = refused(ops.post("/v1/eval-suites", json=suite("acme")), 403, "forbidden")
    assert "has scope 'operator'" in said and "cannot publish a suite" in said
    assert ops.get("/v1/eval-suites").json()["data"] == []
    with pytest.raises(InputError, match="is not given to an operator token"):
        registry.store.issue_token("acme", "x", "operator")
    with pytest.raises(InputError, match="is required: a token of scope read or publish acts for one tenant"):
        registry.store.issue_token(None, "x", "read")


@pytest.mark.parametrize(
    ("body", "said"),
    [
        (entry("Kindgi/Golden"), "name: 'Kindgi/Golden' is not an entry name: write owner/suite in lower case"),
        (entry("golden"), "name: 'golden' is not an entry name"),
        (entry("ops/x", "one"), "version: 'one' is not a semantic version"),
        (
            entry("ops/x", files={"cases.jsonl": '{"id": "a", "text": "hi", "expect": {"escalate": 7}}\n'}),
            "files: not a suite a benchmark can run (1 problem): spec.cases[0].expect.escalate",
        ),
        (entry("ops/x", files={"notes.txt": "x"}), "files: 'notes.txt': not a file of a conversation suite"),
        (entry("ops/x", files={"cases.jsonl": "{not json\n"}), "files: cases.jsonl:1: not valid JSON"),
        ({**entry("ops/x"), "owner": "me"}, "owner: unknown field"),
    ],
    ids=["upper-case", "one-part", "version", "case-invalid", "unknown-file", "bad-json", "unknown-field"],
)
def test_a_bad_entry_is_refused_422_naming_what_is_wrong(registry, operator, body: dict, said: str) -> None:
    ops = operator()
    with unchanged(registry.store):
        message = refused(ops.post("/v1/catalogue", json=body), 422, "invalid")
    assert said in message, message


def test_a_benchmark_suite_may_name_only_what_the_catalogue_holds(registry, caller, operator) -> None:
    me, name = caller(), new_name()
    spec = {"benchmark": {"name": name, "version": "1.0.0"}}
    with unchanged(registry.store):
        message = refused(
            me.http.post("/v1/eval-suites", json=suite(me.tenant, f"{me.tenant}.std", kind="benchmark", spec=spec)),
            422,
            "invalid",
        )
    assert (
        f"spec.benchmark: the catalogue holds no benchmark {name} 1.0.0; it holds " in message
        and "kindgi/golden 1.0.0" in message
    )
    assert operator().post("/v1/catalogue", json=entry(name)).status_code == 201
    assert (
        me.http.post(
            "/v1/eval-suites", json=suite(me.tenant, f"{me.tenant}.std", kind="benchmark", spec=spec)
        ).status_code
        == 201
    )


def test_the_store_answers_what_it_holds_and_none_for_the_rest(registry) -> None:
    store: RegistryStore = registry.store
    golden = store.catalogue_entry("kindgi/golden", "1.0.0")
    assert golden is not None and golden.hash == PINNED and set(golden.files) == {"cases.jsonl", "calibration.jsonl"}
    assert (
        store.catalogue_entry("kindgi/golden", "1.0.1") is None
        and store.catalogue_entry("kindgi/none", "1.0.0") is None
    )


def test_a_message_names_the_versions_of_the_name_asked_for_else_at_most_ten_entries() -> None:
    def info(name: str, version: str) -> EntryInfo:
        return EntryInfo(
            name=name, version=version, hash="0" * 64, description="", published_at="", published_by="package"
        )

    many = [info(f"ops/s{n:02}", "1.0.0") for n in range(25)] + [
        info("kindgi/golden", "1.0.0"),
        info("kindgi/golden", "1.1.0"),
    ]
    assert listing(many, "kindgi/golden") == "kindgi/golden 1.0.0, kindgi/golden 1.1.0"
    said = listing(many, "ops/none")
    assert said.startswith("ops/s00 1.0.0, ops/s01 1.0.0") and said.endswith(
        ", and 17 more (kindgi-eval catalogue list)"
    )
    assert said.count(" 1.") == 10 and listing([], "ops/none") == "nothing"


@pytest.mark.parametrize(
    "path",
    [
        "/v1/catalogue/kindgi%00/golden/versions/1.0.0",  # PostgreSQL refuses a NUL in text: this was a 500 there
        "/v1/catalogue/kindgi/gol%00den/versions/1.0.0",
        "/v1/catalogue/kindgi/golden/versions/1.0.0%00",
        "/v1/catalogue/kindgi/golden/versions/%ff%fe",  # not UTF-8
        "/v1/catalogue/KINDGI/golden/versions/1.0.0",  # no entry name has capitals: never looked up
        "/v1/catalogue/kindgi/golden/versions/" + "9" * 5000 + ".0.0",
        "/v1/eval-suites/acme%00.golden",
        "/v1/eval-suites/acme%00.golden/versions",
        "/v1/eval-suites/acme.golden/versions/1.0.0%00",
        "/v1/eval-suites/acme%00.golden/versions/1.0.0/files",
    ],
    ids=[
        "nul-owner",
        "nul-name",
        "nul-version",
        "not-utf8",
        "capitals",
        "long-version",
        "nul-suite",
        "nul-versions",
        "nul-suite-version",
        "nul-files",
    ],
)
def test_a_path_no_entry_or_suite_can_have_is_404_on_every_backend(registry, caller, path: str) -> None:
    reader = caller()
    refused(reader.http.get(path), 404, "not_found")

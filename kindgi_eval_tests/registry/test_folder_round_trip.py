"""A suite folder published with `kindgi-eval suites publish` is pulled back byte for byte by `suites pull`; its files
are kept beside the version, outside its content: the hash is the one of its items, whatever their layout. On both
backends, through the real command line and HTTP."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from kindgi_eval.registry import SUITE_DOCUMENT, canonical_json
from kindgi_eval_tests.conftest import files_under, run_cli
from kindgi_eval_tests.registry.conftest import refused, suite, unchanged

# Irregular on purpose: blank and whitespace-only lines, CRLF, tabs, spaces around separators, keys out of order (in
# nested objects too), non-ASCII text as is and escaped, trailing spaces, and no final newline in cases.jsonl.
CASES = (
    "\n"
    '  {"text": "How much is the foundation course?",   "id": "price", "expect": {"escalate": false},"must_contain": ["€"]}  \r\n'
    "\t\n"
    '{"expect":{"reason":"refund_request","escalate":true},"id":"refund","text":"I want my money back \\u2014 now"}\n'
    "\n\n"
    '{ "id" : "days", "contact": {"course": "frontend", "funnel_stage": "payment"}, "text": "Which days?", "expect": {"escalate": false} }'
).encode()
CALIBRATION = (
    b'{"label": "pass", "criterion": "implicit_concession", "id": "cal", "text": "how much?", "reply": ["$450 upfront. Shall I book you?"]}\n'
    b"\n"
)
TIDY = {  # the same items, one per line, as a tidy author writes them
    "cases.jsonl": b"".join(
        json.dumps(item).encode() + b"\n"
        for item in (
            {
                "id": "price",
                "text": "How much is the foundation course?",
                "expect": {"escalate": False},
                "must_contain": ["€"],
            },
            {
                "id": "refund",
                "text": "I want my money back \u2014 now",
                "expect": {"escalate": True, "reason": "refund_request"},
            },
            {
                "id": "days",
                "text": "Which days?",
                "contact": {"funnel_stage": "payment", "course": "frontend"},
                "expect": {"escalate": False},
            },
        )
    ),
    "calibration.jsonl": b'{"id": "cal", "text": "how much?", "reply": ["$450 upfront. Shall I book you?"], "criterion": "implicit_concession", "label": "pass"}\n',
}


def _folder(path: Path, files: dict[str, bytes]) -> Path:
    path.mkdir()
    for name, data in files.items():
        (path / name).write_bytes(data)
    return path


def _contents(folder: Path) -> dict[str, bytes]:
    """Every file of a folder by name, as bytes, but the document `suites pull` writes beside the files."""
    return {p.name: p.read_bytes() for p in files_under(folder) if p.name != SUITE_DOCUMENT}


def _items_hash(suite_id: str, tenant: str, files: dict[str, bytes]) -> str:
    """The content hash as it was before files were kept: the document of each file's non-blank lines, parsed."""
    spec = {
        name.removesuffix(".jsonl"): [json.loads(line) for line in data.decode().splitlines() if line.strip()]
        for name, data in files.items()
    }
    document = {
        "id": suite_id,
        "tenantId": tenant,
        "version": "1.0.0",
        "kind": "conversation",
        "description": "",
        "spec": spec,
    }
    return hashlib.sha256(canonical_json(document)).hexdigest()


def test_a_folder_with_irregular_whitespace_and_key_order_pulls_back_byte_for_byte(
    registry, caller, tmp_path: Path
) -> None:
    me = caller()
    env = {"KINDGI_REGISTRY_URL": registry.url, "KINDGI_REGISTRY_TOKEN": me.secret}
    suite_id = f"{me.tenant}.pricing"
    original = _folder(tmp_path / "original", {"cases.jsonl": CASES, "calibration.jsonl": CALIBRATION})
    published = run_cli("suites", "publish", str(original), "--id", suite_id, "--version", "1.0.0", env=env)
    assert published.code == 0 and published.err == "", published.err
    # the hash is the items' alone, as before the files were kept
    assert (
        published.out
        == f"published: {suite_id} 1.0.0 (conversation) sha256 {_items_hash(suite_id, me.tenant, _contents(original))}\n"
    )
    pulled = run_cli("suites", "pull", suite_id, str(tmp_path / "pulled"), env=env)
    assert pulled.code == 0, pulled.err
    assert _contents(tmp_path / "pulled") == _contents(original)  # every file, byte for byte, and no other
    assert (
        json.loads((tmp_path / "pulled" / SUITE_DOCUMENT).read_text())["spec"]["cases"]
        == json.loads(run_cli("suites", "show", suite_id, env=env).out)["suite"]["spec"]["cases"]
    )  # beside them, the document
    assert run_cli("validate", str(tmp_path / "pulled")).code == 0


def test_a_folder_differing_only_in_layout_is_the_same_version_and_keeps_the_first_files(
    registry, caller, tmp_path: Path
) -> None:
    me = caller()
    env = {"KINDGI_REGISTRY_URL": registry.url, "KINDGI_REGISTRY_TOKEN": me.secret}
    suite_id = f"{me.tenant}.pricing"
    original = _folder(tmp_path / "original", {"cases.jsonl": CASES, "calibration.jsonl": CALIBRATION})
    tidy = _folder(tmp_path / "tidy", TIDY)
    first = run_cli("suites", "publish", str(original), "--id", suite_id, "--version", "1.0.0", env=env)
    with unchanged(registry.store):
        again = run_cli("suites", "publish", str(tidy), "--id", suite_id, "--version", "1.0.0", env=env)
    assert again.code == 0 and again.out == first.out.replace("published:", "already published, with the same content:")
    assert again.err == (
        f"note: {suite_id} 1.0.0 keeps the files it was first published with, which lay out the same content "
        "otherwise; `suites pull` writes those.\n"
    )
    assert run_cli("suites", "pull", suite_id, str(tmp_path / "pulled"), env=env).code == 0
    assert _contents(tmp_path / "pulled") == _contents(original)


def test_a_suite_published_as_a_document_pulls_one_item_per_line(registry, caller, tmp_path: Path) -> None:
    me = caller()
    document = suite(me.tenant, suite_id=f"{me.tenant}.pricing")
    assert me.http.post("/v1/eval-suites", json=document).status_code == 201
    assert me.http.get(f"/v1/eval-suites/{me.tenant}.pricing/versions/1.0.0/files").json() == {"files": None}
    env = {"KINDGI_REGISTRY_URL": registry.url, "KINDGI_REGISTRY_TOKEN": me.secret}
    assert run_cli("suites", "pull", f"{me.tenant}.pricing", str(tmp_path / "pulled"), env=env).code == 0
    expected = "".join(
        json.dumps(item, sort_keys=True, ensure_ascii=False) + "\n" for item in document["spec"]["cases"]
    )
    assert _contents(tmp_path / "pulled") == {"cases.jsonl": expected.encode("utf-8")}


def test_files_that_do_not_hold_the_version_are_refused_422(registry, caller) -> None:
    me = caller()
    cases = '{"id": "price", "text": "How much is it?", "expect": {"escalate": false}, "must_contain": ["€"]}\n'
    assert me.http.post("/v1/eval-suites", json=suite(me.tenant)).status_code == 201
    path = "/v1/eval-suites/acme.pricing/versions/1.0.0/files"
    with unchanged(registry.store):
        other = refused(me.http.put(path, json={"files": {"cases.jsonl": cases.replace("€", "$")}}), 422, "invalid")
        extra = refused(
            me.http.put(path, json={"files": {"cases.jsonl": cases, "calibration.jsonl": ""}}), 422, "invalid"
        )
        broken = refused(
            me.http.put(path, json={"files": {"cases.jsonl": "\n" + cases + "{not json\n"}}), 422, "invalid"
        )
        unknown = refused(me.http.put(path, json={"files": {"../cases.jsonl": cases}}), 422, "invalid")
        surrogate = refused(
            me.http.put(path, json={"files": {"cases.jsonl": cases.replace("€", "\\ud800")}}), 422, "invalid"
        )
        missing = refused(
            me.http.put("/v1/eval-suites/acme.pricing/versions/2.0.0/files", json={"files": {"cases.jsonl": cases}}),
            404,
            "not_found",
        )
    assert other == (
        "files: they do not hold what suite 'acme.pricing' version 1.0.0 holds (they differ in: spec.cases). "
        "Send the files it was published from."
    )
    assert "(they differ in: spec.calibration)" in extra
    assert broken.startswith("files: cases.jsonl:3: not valid JSON: ")
    assert unknown.startswith("files: '../cases.jsonl': not a file of a conversation suite")
    assert "has no version '2.0.0'" in missing
    assert "(a line holds a lone surrogate, \\ud800-\\udfff)" in surrogate
    kept = me.http.put(path, json={"files": {"cases.jsonl": cases}})
    assert kept.status_code == 201 and kept.json() == {"files": {"cases.jsonl": cases}}
    assert me.http.get(path).json() == {"files": {"cases.jsonl": cases}}


def test_a_kind_never_published_from_a_folder_keeps_no_files(registry, caller) -> None:
    me = caller()
    accuracy = {"cases": [{"input": "price?", "expectedOutput": "$450"}]}
    assert me.http.post("/v1/eval-suites", json=suite(me.tenant, kind="accuracy", spec=accuracy)).status_code == 201
    with unchanged(registry.store):
        message = refused(
            me.http.put(
                "/v1/eval-suites/acme.pricing/versions/1.0.0/files",
                json={"files": {"cases.jsonl": json.dumps(accuracy["cases"][0])}},
            ),
            422,
            "invalid",
        )
    assert message == (
        "suite 'acme.pricing' version 1.0.0: is of kind accuracy, which keeps no files; only a suite published from a "
        "folder does."
    )

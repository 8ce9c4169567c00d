"""Every kind from a file: `suites publish FILE` checks a document of any kind here as the server would, sends it, and
`suites pull` writes it back, its document and the files it is edited as, so the two round-trip byte for byte. Real
processes against a real registry on 127.0.0.1."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from kindgi_eval.kinds import consumers
from kindgi_eval.registry import SUITE_DOCUMENT, open_store, pulled_files, running_server
from kindgi_eval.rules import InputError
from kindgi_eval_tests.conftest import files_under, run_cli
from kindgi_eval_tests.registry.conftest import golden_spec
from kindgi_eval_tests.registry.test_kinds import ACCURACY, PAIRWISE

HANDLER = "def grade(case, reply):\n    return {'pass': bool(reply['messages']), 'reason': 'answered'}\n"
SPECS = {
    "conversation": golden_spec(),
    "accuracy": ACCURACY,
    "pairwise": PAIRWISE,
    "regression": {"baseline": {"runId": "3f9c2a1e-0000-4000-8000-000000000001"}, "cases": golden_spec()["cases"][:3]},
    "human-review": {
        "rubric": ["Answers what the contact asked"],
        "reviewerRole": "sales lead",
        "cases": golden_spec()["cases"][:2],
    },
    "benchmark": {"benchmark": {"name": "kindgi/golden", "version": "1.0.0"}},
    "custom": {
        "handler": {"modulePath": "graders/tone.py", "entrypointPath": "grade", "source": HANDLER},
        "cases": golden_spec()["cases"][:2],
    },
}
"""A runnable spec of each of the seven kinds."""
EDITED_AS = {"conversation": {"cases.jsonl", "calibration.jsonl"}, "custom": {"cases.jsonl", "graders/tone.py"}}
"""Beside suite.json, the files a pulled version of a kind is edited as; the other kinds are their document only."""


@pytest.fixture
def served(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[object]:
    """A registry in a fresh SQLite file, served on a free port; the environment points the client at it as acme."""
    store = open_store(f"sqlite:///{tmp_path / 'registry' / 'registry.sqlite'}")
    monkeypatch.setenv("KINDGI_REGISTRY_TOKEN", store.issue_token("acme", "documents").secret)
    try:
        with running_server(store, consumers(), port=0) as server:
            monkeypatch.setenv("KINDGI_REGISTRY_URL", server.url)
            yield store
    finally:
        store.close()


def written(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in files_under(folder)}


def test_the_seven_kinds_are_the_ones_the_registry_takes() -> None:
    assert set(SPECS) == set(consumers())


@pytest.mark.parametrize("kind", sorted(SPECS))
def test_a_document_of_each_kind_is_published_from_a_file_and_pulled_back_byte_for_byte(
    served, tmp_path: Path, kind: str
) -> None:
    document = {
        "id": f"acme.{kind}",
        "version": "1.0.0",
        "kind": kind,
        "description": f"a {kind} suite",
        "spec": SPECS[kind],
    }
    (tmp_path / "suite.json").write_text(json.dumps(document))
    published = run_cli("suites", "publish", str(tmp_path / "suite.json"))
    assert published.code == 0, published.err
    assert published.out.startswith(f"published: acme.{kind} 1.0.0 ({kind}) sha256 ")
    first = tmp_path / "first"
    pulled = run_cli("suites", "pull", f"acme.{kind}", str(first))
    assert pulled.code == 0, pulled.err
    files = written(first)
    assert set(files) == {SUITE_DOCUMENT} | EDITED_AS.get(kind, set())
    assert json.loads(files[SUITE_DOCUMENT]) == {**document, "tenantId": "acme"}
    again = run_cli(
        "suites", "publish", str(first / SUITE_DOCUMENT)
    )  # the pulled document is the same version, as it is
    assert again.code == 0 and again.out.startswith(f"already published, with the same content: acme.{kind} 1.0.0"), (
        again.err
    )
    second = tmp_path / "second"
    assert run_cli("suites", "pull", f"acme.{kind}", str(second)).code == 0
    assert written(second) == files


def test_a_pulled_document_is_edited_and_published_as_the_next_version(served, tmp_path: Path) -> None:
    (tmp_path / "suite.json").write_text(
        json.dumps({"id": "acme.accuracy", "version": "1.0.0", "kind": "accuracy", "spec": ACCURACY})
    )
    assert run_cli("suites", "publish", str(tmp_path / "suite.json")).code == 0
    bumped = run_cli("suites", "publish", str(tmp_path / "suite.json"), "--version", "1.1.0", "--description", "bumped")
    assert bumped.code == 0 and bumped.out.startswith("published: acme.accuracy 1.1.0 (accuracy)"), bumped.err
    assert json.loads(run_cli("suites", "show", "acme.accuracy").out)["suite"]["description"] == "bumped"


def test_a_custom_suite_s_handler_is_read_from_its_file_and_pulled_back_as_its_module(served, tmp_path: Path) -> None:
    folder = tmp_path / "tone"
    (folder / "graders").mkdir(parents=True)
    (folder / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in golden_spec()["cases"][:2]))
    (folder / "graders" / "tone.py").write_text(HANDLER)
    published = run_cli(
        "suites",
        "publish",
        str(folder),
        "--id",
        "acme.tone",
        "--version",
        "1.0.0",
        "--kind",
        "custom",
        "--handler",
        f"{folder / 'graders' / 'tone.py'}:grade",
    )
    assert published.code == 0 and "(custom)" in published.out, published.err
    handler = json.loads(run_cli("suites", "show", "acme.tone").out)["suite"]["spec"]["handler"]
    assert handler == {
        "modulePath": "graders/tone.py",
        "entrypointPath": "grade",
        "source": HANDLER,
    }  # its path below the folder
    pulled = tmp_path / "pulled"
    assert run_cli("suites", "pull", "acme.tone", str(pulled)).code == 0
    assert (pulled / "graders" / "tone.py").read_text() == HANDLER
    lines = [json.loads(line) for line in (pulled / "cases.jsonl").read_text().splitlines()]
    assert (
        lines == golden_spec()["cases"][:2]
    )  # item for item: a custom suite keeps no files, so its lines are written anew
    again = run_cli(
        "suites",
        "publish",
        str(pulled),
        "--id",
        "acme.tone",
        "--version",
        "1.0.0",
        "--kind",
        "custom",
        "--handler",
        f"{pulled / 'graders' / 'tone.py'}:grade",
    )
    assert again.code == 0 and again.out.startswith("already published, with the same content: acme.tone 1.0.0"), (
        again.err
    )


def test_a_folder_published_as_custom_without_a_handler_is_refused_as_the_server_would(served, tmp_path: Path) -> None:
    (tmp_path / "cases.jsonl").write_text(json.dumps(golden_spec()["cases"][0]) + "\n")
    refused = run_cli("suites", "publish", str(tmp_path), "--id", "acme.tone", "--version", "1.0.0", "--kind", "custom")
    assert refused.code == 2 and refused.err.startswith(
        f"error: {tmp_path}: spec: not a custom suite kindgi-eval run can run"
    )
    assert "spec.handler: required field is missing" in refused.err


@pytest.mark.parametrize(
    ("text", "said"),
    [
        (
            '{"id": "acme.a",\n "version": "1.0.0",\n "kind": }',
            "suite.json:3: not valid JSON: Expecting value at column 10.",
        ),
        ("[1, 2]", "suite.json: must hold one JSON object, a suite"),
        (
            json.dumps(
                {
                    "id": "acme.a",
                    "version": "1.0.0",
                    "kind": "accuracy",
                    "spec": {**ACCURACY, "grader": {"adapterId": "bleu"}},
                }
            ),
            "spec.grader.adapterId: unknown grader adapter 'bleu'",
        ),
        (json.dumps({"id": "acme.a", "version": "1.0.0", "kind": "poll", "spec": {}}), "kind: 'poll' is not a kind"),
        (
            json.dumps({"id": "acme.a", "version": "one", "kind": "benchmark", "spec": SPECS["benchmark"]}),
            "version: 'one' is not a semantic version",
        ),
    ],
    ids=["json", "not-an-object", "consumer-check", "unknown-kind", "version"],
)
def test_a_bad_document_is_refused_naming_its_file_before_anything_is_sent(
    served, tmp_path: Path, text: str, said: str
) -> None:
    path = tmp_path / "suite.json"
    path.write_text(text)
    refused = run_cli("suites", "publish", str(path))
    assert refused.code == 2 and refused.err.startswith(f"error: {tmp_path}/") and said in refused.err, refused.err
    assert served.latest("acme", "acme.a") is None


def test_a_folder_needs_its_id_and_version_and_a_document_names_its_own_kind(served, tmp_path: Path) -> None:
    (tmp_path / "cases.jsonl").write_text(json.dumps(golden_spec()["cases"][0]) + "\n")
    missing = run_cli("suites", "publish", str(tmp_path))
    assert (
        missing.code == 2
        and "error: --id: is required to publish a folder" in missing.err
        and "--version" in missing.err
    )
    (tmp_path / "suite.json").write_text(
        json.dumps({"id": "acme.a", "version": "1.0.0", "kind": "benchmark", "spec": SPECS["benchmark"]})
    )
    both = run_cli("suites", "publish", str(tmp_path / "suite.json"), "--kind", "custom")
    assert both.code == 2 and both.err.startswith("error: --kind: is a folder's;")


@pytest.mark.parametrize("name", ["../outside.py", "/etc/x.py", "a/../../b.py", "suite.json"])
def test_a_pulled_file_name_outside_the_folder_is_refused(name: str) -> None:
    document = {"id": "acme.a", "version": "1.0.0", "kind": "conversation", "spec": {"cases": []}}
    with pytest.raises(InputError, match="is not a path inside the folder; nothing was written"):
        pulled_files(document, {name: "x"}, consumers())

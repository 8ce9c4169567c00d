"""`kindgi-eval suites publish|list|show|pull` as real processes against a real registry on 127.0.0.1."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kindgi_eval.kinds import consumers
from kindgi_eval.registry import open_store, running_server
from kindgi_eval_tests.conftest import GOLDEN, run_cli


@pytest.fixture
def served(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A registry in a fresh SQLite file, served on a free port; the environment points the client at it as acme."""
    store = open_store(f"sqlite:///{tmp_path / 'registry.sqlite'}")
    token = store.issue_token("acme", "client test").secret
    with running_server(store, consumers(), port=0) as server:
        monkeypatch.setenv("KINDGI_REGISTRY_URL", server.url)
        monkeypatch.setenv("KINDGI_REGISTRY_TOKEN", token)
        yield store
    store.close()


def test_publish_list_show_and_pull_round_trip_a_suite_folder(served, tmp_path: Path) -> None:
    published = run_cli("suites", "publish", str(GOLDEN), "--id", "acme.golden", "--version", "1.0.0")
    assert published.code == 0, published.err
    assert published.out.startswith("published: acme.golden 1.0.0 (conversation) sha256 ")
    again = run_cli("suites", "publish", str(GOLDEN), "--id", "acme.golden", "--version", "1.0.0")
    assert again.code == 0 and again.out.startswith("already published, with the same content: acme.golden 1.0.0")
    listing = run_cli("suites", "list")
    assert listing.code == 0 and "acme.golden" in listing.out and "1.0.0" in listing.out
    shown = json.loads(run_cli("suites", "show", "acme.golden").out)
    assert shown["suite"]["kind"] == "conversation" and len(shown["suite"]["spec"]["cases"]) == 36
    pulled = tmp_path / "pulled"
    assert run_cli("suites", "pull", "acme.golden", str(pulled)).code == 0
    for name in ("cases.jsonl", "calibration.jsonl"):
        original = [json.loads(line) for line in (GOLDEN / name).read_text().splitlines() if line.strip()]
        assert [json.loads(line) for line in (pulled / name).read_text().splitlines()] == original
    assert run_cli("validate", str(pulled)).code == 0


def test_the_servers_refusals_are_one_line_input_errors(served, tmp_path: Path) -> None:
    assert run_cli("suites", "publish", str(GOLDEN), "--id", "acme.golden", "--version", "1.1.0").code == 0
    lower = run_cli("suites", "publish", str(GOLDEN), "--id", "acme.golden", "--version", "1.0.0")
    assert (
        lower.code == 2
        and lower.err.startswith("error: POST ")
        and "HTTP 409" in lower.err
        and "(conflict)" in lower.err
    )
    other = run_cli("suites", "publish", str(GOLDEN), "--id", "acme.golden", "--version", "2.0.0", "--tenant", "globex")
    assert other.code == 2 and "HTTP 403" in other.err
    missing = run_cli("suites", "show", "acme.nothing")
    assert missing.code == 2 and "HTTP 404" in missing.err and len(missing.err.splitlines()) == 1


def test_a_bad_folder_is_refused_before_anything_is_sent(served, tmp_path: Path) -> None:
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "cases.jsonl").write_text(
        '{"id": "x", "text": "hi", "expect": {"escalate": false}, "must_contains": []}\n'
    )
    refused = run_cli("suites", "publish", str(tmp_path / "bad"), "--id", "acme.bad", "--version", "1.0.0")
    assert refused.code == 2 and "cases.jsonl:1: field must_contains: unknown field" in refused.err
    assert run_cli("suites", "list").out.count("acme.bad") == 0


def test_an_unset_registry_or_one_that_is_down(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KINDGI_REGISTRY_URL", raising=False)
    monkeypatch.delenv("KINDGI_REGISTRY_TOKEN", raising=False)
    unset = run_cli("suites", "list")
    assert (
        unset.code == 2
        and "error: KINDGI_REGISTRY_URL: is not set" in unset.err
        and "KINDGI_REGISTRY_TOKEN" in unset.err
    )
    down = run_cli("suites", "list", env={"KINDGI_REGISTRY_URL": "http://127.0.0.1:9", "KINDGI_REGISTRY_TOKEN": "t"})
    assert down.code == 1 and "the registry cannot be reached" in down.err

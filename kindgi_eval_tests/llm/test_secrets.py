"""A run with a key in the environment writes no byte of it anywhere under the runtime folder, nor to the logs,
even when a provider echoes the key and the Authorization header back in its errors."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from kindgi_eval.defs.runs import open_instance, run_chain
from kindgi_eval.inputs.settings import RunSettings
from kindgi_eval.inputs.suite_folder import suite_key
from kindgi_eval.llm.calls import forget_clients
from kindgi_eval.store.layout import SHARED, read_rows
from kindgi_eval_tests.conftest import files_under
from kindgi_eval_tests.fake_provider import Answer, FakeProvider, fenced, user_text

FAKE_KEY = "sk-kindgi-fake-4f9c2e7a1b3d5968"
KEY_TAIL = "4f9c2e7a1b3d5968"  # a provider may mask the head of a key and show the rest
LEAK = f"Incorrect API key provided: {FAKE_KEY}. You sent Authorization: Bearer {FAKE_KEY}"


def error_body(message: str) -> bytes:
    return json.dumps({"error": {"message": message, "type": "invalid_request_error"}}).encode()


def treacherous(request: dict) -> Answer:
    """A provider that puts the caller's key into everything that can go wrong."""
    if "Criterion to grade" in user_text(request):  # the judge
        return Answer(status=401, raw_body=error_body(LEAK))
    text = fenced(request, "contact message")
    if "AUTHFAIL" in text:
        return Answer(status=401, raw_body=error_body(LEAK))
    if "DOWNFAIL" in text:
        return Answer(status=503, raw_body=error_body(LEAK), headers={"Retry-After": "0"})
    if "GARBLE" in text:
        return Answer(f"Sure! Authorization: Bearer {FAKE_KEY} and api_key={FAKE_KEY}")
    return Answer(
        json.dumps(
            {"messages": ["The Foundation Course is $450. Upfront or instalments?"], "escalate": False, "reason": None}
        )
    )


def test_a_run_writes_no_byte_of_the_key(home, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, caplog, capfd) -> None:
    caplog.set_level(logging.DEBUG)
    cases = [
        {
            "id": "price",
            "text": "how much is the foundation course?",
            "expect": {"escalate": False},
            "review": "polite",
        },
        {"id": "auth", "text": "AUTHFAIL how much?", "expect": {"escalate": False}},
        {"id": "down", "text": "DOWNFAIL how much?", "expect": {"escalate": False}},
        {"id": "garble", "text": "GARBLE how much?", "expect": {"escalate": False}},
    ]
    calibration = [
        {"id": "cal-pass", "text": "hi", "reply": ["Hello!"], "criterion": "polite", "label": "pass"},
        {"id": "cal-fail", "text": "hi", "reply": ["Go away."], "criterion": "polite", "label": "fail"},
    ]
    folder = tmp_path / "secrets"
    folder.mkdir()
    (folder / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    (folder / "calibration.jsonl").write_text("".join(json.dumps(c) + "\n" for c in calibration))
    forget_clients()
    with FakeProvider(treacherous) as server:
        monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        key = suite_key("demo-academy", folder)
        settings = RunSettings(eval_dir=str(folder), agent_model="openai:fake", judge_model="openai:fake-judge")
        run_id = run_chain(open_instance(home.root), home.root, settings, key, "conversation")
    forget_clients()

    # the key was really used, and really echoed back: the test proves something
    assert all(FAKE_KEY in {v for k, v in h.items() if k.lower() == "authorization"}.pop() for h in server.headers)
    replies = {r.case_id: r for r in read_rows(home.store, SHARED.agent_replies, key, run_id)}
    assert "Incorrect API key provided: [redacted]" in replies["auth"].error
    assert "HTTP 503 on every attempt" in replies["down"].error
    assert replies["garble"].raw == "Sure! Authorization: Bearer [redacted] and api_key=[redacted]"
    samples = read_rows(home.store, SHARED.judge_samples, key, run_id)
    assert samples and all("[redacted]" in s.invalid_reason for s in samples)

    files = files_under(home.root)
    assert files
    leaked = [
        str(p.relative_to(home.root))
        for p in files
        if FAKE_KEY.encode() in p.read_bytes() or KEY_TAIL.encode() in p.read_bytes()
    ]
    assert leaked == []
    for parquet in (p for p in files if p.suffix == ".parquet"):  # compressed pages: look at the values too
        assert KEY_TAIL not in json.dumps(pq.read_table(parquet).to_pylist(), default=str), parquet
    assert KEY_TAIL not in caplog.text
    out, err = capfd.readouterr()
    assert KEY_TAIL not in out and KEY_TAIL not in err

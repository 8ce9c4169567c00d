"""Model calls sent to a LiteLLM gateway: the OpenAI-compatible client of `llm.gateway`, run by `calls.complete`'s retry
loop, against a scripted OpenAI-compatible server on 127.0.0.1 standing in for the gateway."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import threading
import time

import pytest

from kindgi_eval.llm.calls import CallPolicy, ModelCallError, RetryPolicy, complete, forget_clients
from kindgi_eval.llm.gateway import COST_HEADER, Gateway
from kindgi_eval.rules.model_names import parse_model
from kindgi_eval_tests.conftest import run_cli
from kindgi_eval_tests.fake_provider import Answer, FakeProvider, scripted

FAST = CallPolicy(RetryPolicy(attempts=4, base_delay_s=0.01, max_delay_s=0.05))
MESSAGES = [{"role": "user", "content": "hi"}]
MODEL = parse_model("openai:gpt-4o-mini")
KEY = "sk-gateway-test-key-0123456789"


@pytest.fixture
def gateway():
    """Start a fake gateway answering `script`; the Gateway that points at it, and the server."""
    started: list[FakeProvider] = []

    def start(*answers: Answer) -> tuple[Gateway, FakeProvider]:
        forget_clients()  # circuits remember failures across tests
        server = FakeProvider(scripted(*answers)).__enter__()
        started.append(server)
        return Gateway(server.base_url.removesuffix("/v1"), KEY), server

    yield start
    for server in started:
        server.__exit__(None, None, None)
    forget_clients()


def call(gw: Gateway, timeout_s: float = 5.0, **params) -> object:
    return asyncio.run(complete(MODEL, MESSAGES, timeout_s=timeout_s, policy=FAST, gateway=gw, **params))


def test_a_reply_comes_back_with_its_usage_and_the_gateways_price(gateway) -> None:
    gw, server = gateway(Answer("hello", headers={COST_HEADER: "0.00042"}))
    done = call(gw)
    assert done.content == "hello"
    assert (done.usage.prompt_tokens, done.usage.completion_tokens) == (100, 20)
    assert done.usage.cost_usd == pytest.approx(0.00042) and done.usage.cost_known
    assert server.requests[0]["model"] == "openai/gpt-4o-mini"  # litellm's name, which the gateway routes
    assert server.requests[0]["messages"] == MESSAGES
    assert server.headers[0]["Authorization"] == f"Bearer {KEY}"


def test_a_reply_without_a_price_is_flagged_unknown(gateway) -> None:
    gw, _ = gateway(Answer("hello"))
    usage = call(gw).usage
    assert usage.cost_usd == 0.0 and not usage.cost_known


def test_a_schema_is_sent_as_the_json_schema_response_format(gateway) -> None:
    gw, server = gateway(Answer('{"verdict": "pass"}'))
    schema = {"name": "verdict", "schema": {"type": "object"}, "strict": True}
    done = asyncio.run(complete(MODEL, MESSAGES, timeout_s=5, policy=FAST, gateway=gw, schema=schema))
    assert json.loads(done.content) == {"verdict": "pass"}
    assert server.requests[0]["response_format"] == {"type": "json_schema", "json_schema": schema}


def test_params_such_as_a_json_object_response_format_are_sent_as_they_are(gateway) -> None:
    gw, server = gateway(Answer("{}"))
    call(gw, response_format={"type": "json_object"})
    assert server.requests[0]["response_format"] == {"type": "json_object"}


def test_a_429_waits_its_retry_after_then_succeeds(gateway) -> None:
    gw, server = gateway(Answer(status=429, headers={"Retry-After": "0.2"}), Answer("ok"))
    loop = asyncio.new_event_loop()
    started = loop.time()
    done = loop.run_until_complete(complete(MODEL, MESSAGES, timeout_s=5, policy=FAST, gateway=gw))
    waited = loop.time() - started
    loop.close()
    assert done.content == "ok" and len(server.requests) == 2
    assert waited >= 0.2


def test_a_500_is_retried(gateway) -> None:
    gw, server = gateway(Answer(status=500), Answer(status=503), Answer("ok"))
    assert call(gw).content == "ok"
    assert len(server.requests) == 3


def test_a_server_error_on_every_attempt_gives_up_after_the_policys_attempts(gateway) -> None:
    gw, server = gateway(Answer(status=502))
    with pytest.raises(ModelCallError) as failed:
        call(gw)
    assert failed.value.fault == "server" and failed.value.attempts == 4 == len(server.requests)
    assert "HTTP 502 on every attempt" in str(failed.value)


def test_an_input_error_is_not_retried(gateway) -> None:
    gw, server = gateway(Answer(status=400, raw_body=b'{"error": "bad request"}'))
    with pytest.raises(ModelCallError) as failed:
        call(gw)
    assert failed.value.fault == "input" and len(server.requests) == 1


def test_a_refused_key_is_not_retried_and_its_message_holds_no_key(gateway) -> None:
    echoed = json.dumps({"error": f"Authentication Error, invalid key {KEY}; Authorization: Bearer {KEY}"}).encode()
    gw, server = gateway(Answer(status=401, raw_body=echoed))
    with pytest.raises(ModelCallError) as failed:
        call(gw)
    assert failed.value.fault == "auth" and len(server.requests) == 1
    assert KEY not in str(failed.value) and "[redacted]" in str(failed.value)


def test_a_gateway_slower_than_the_timeout_is_a_timeout_not_retried(gateway) -> None:
    gw, server = gateway(Answer("late", delay_s=1.0))
    with pytest.raises(ModelCallError) as failed:
        call(gw, timeout_s=0.3)
    assert failed.value.fault == "timeout" and len(server.requests) == 1
    assert "no answer within the 0.3 s call timeout" in str(failed.value)


def test_a_gateway_that_cannot_be_reached_is_waited_for_while_the_call_lasts_then_is_a_server_error() -> None:
    forget_clients()
    with pytest.raises(ModelCallError) as failed:
        call(Gateway("http://127.0.0.1:9", KEY), timeout_s=1.2)  # the discard port: nothing listens
    # the one attempt waited out the call's time, trying to connect, and no retry was left time to start
    assert failed.value.fault == "server" and failed.value.attempts == 1
    assert "could not be reached for" in str(failed.value)


def test_a_gateway_that_comes_back_within_the_calls_time_answers_it_on_the_first_attempt() -> None:
    # a restart: nothing listens on the gateway's port for 1.5 s, then it serves
    forget_clients()
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    later: list[FakeProvider] = []
    timer = threading.Timer(1.5, lambda: later.append(FakeProvider(scripted(Answer("back")), port=port).__enter__()))
    timer.start()
    try:
        started = time.monotonic()
        done = asyncio.run(
            complete(MODEL, MESSAGES, timeout_s=10.0, policy=FAST, gateway=Gateway(f"http://127.0.0.1:{port}", KEY))
        )
        assert done.content == "back" and time.monotonic() - started >= 1.4
        assert len(later[0].requests) == 1  # one request, sent once the gateway listened
    finally:
        timer.join()
        for server in later:
            server.__exit__(None, None, None)
        forget_clients()


def test_a_gateway_that_breaks_the_connection_mid_request_is_retried_as_a_server_error(gateway) -> None:
    gw, server = gateway(Answer(raw_body=b"", headers={"Content-Length": "999"}), Answer("hello"))
    assert call(gw).content == "hello" and len(server.requests) == 2


def test_a_call_to_the_gateway_imports_no_litellm(gateway) -> None:
    gw, _ = gateway(Answer("hello"))
    probe = (
        "import asyncio, sys\n"
        "from kindgi_eval.llm import Gateway, complete\n"
        "from kindgi_eval.rules.model_names import parse_model\n"
        f"done = asyncio.run(complete(parse_model('openai:gpt-4o-mini'), [{{'role': 'user', 'content': 'hi'}}], "
        f"timeout_s=5, gateway=Gateway({gw.url!r}, None)))\n"
        "print(done.content, 'litellm' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.stdout.split() == ["hello", "False"], done.stderr


# --- a whole run through the gateway ----------------------------------------------------------------------------

TRIPWIRE = '''"""Stands in for litellm on the path of a run that must not import it: importing it leaves a mark and fails."""
import os
import pathlib

pathlib.Path(os.environ["LITELLM_IMPORT_MARK"]).write_text("imported")
raise ImportError("litellm was imported")
'''


QUOTE = Answer(json.dumps({"messages": ["The Foundation Course is $450."], "escalate": False, "reason": None}))
"""The agent's answer to every case."""


def test_a_run_pointed_at_a_gateway_makes_its_calls_there_without_litellm_or_a_provider_key(
    home, tmp_path, monkeypatch
) -> None:
    shadow = tmp_path / "shadow"
    shadow.mkdir()
    (shadow / "litellm.py").write_text(TRIPWIRE)
    mark = tmp_path / "litellm-imported"
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(var, raising=False)  # the provider's key lives in the gateway alone
    cases = [
        {"id": f"c{n}", "text": "how much is the foundation course?", "expect": {"escalate": False}} for n in range(3)
    ]
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    out = tmp_path / "summary.json"
    with FakeProvider(scripted(QUOTE)) as server:
        url = server.base_url.removesuffix("/v1")
        env = {"PYTHONPATH": str(shadow), "LITELLM_IMPORT_MARK": str(mark), "KINDGI_GATEWAY_KEY": KEY}
        result = run_cli(
            "run",
            "--eval-dir",
            str(tmp_path),
            "--agent-model",
            "openai:gpt-4o-mini",
            "--gateway-url",
            url,
            "--json",
            str(out),
            env=env,
        )
    assert result.code == 0, result.err
    assert not mark.exists()  # the run's process never imported litellm
    assert json.loads(out.read_text())["counts"]["passed"] == 3
    assert len(server.requests) == 3
    assert {r["model"] for r in server.requests} == {"openai/gpt-4o-mini"}
    assert {h["Authorization"] for h in server.headers} == {f"Bearer {KEY}"}


def test_without_a_gateway_a_run_names_the_missing_provider_key(home, tmp_path, monkeypatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    (tmp_path / "cases.jsonl").write_text(json.dumps({"id": "c", "text": "hi", "expect": {"escalate": False}}) + "\n")
    result = run_cli("run", "--eval-dir", str(tmp_path), "--agent-model", "openai:gpt-4o-mini")
    assert result.code == 2 and "OPENAI_API_KEY" in result.err


def test_on_the_command_line_the_flags_gateway_is_the_deployments_and_gets_the_key(home, tmp_path, monkeypatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    (tmp_path / "cases.jsonl").write_text(
        json.dumps({"id": "c", "text": "how much?", "expect": {"escalate": False}}) + "\n"
    )
    with FakeProvider(scripted(QUOTE)) as flagged, FakeProvider(scripted(QUOTE)) as configured:
        env = {"KINDGI_GATEWAY_URL": configured.base_url.removesuffix("/v1"), "KINDGI_GATEWAY_KEY": KEY}
        result = run_cli(
            "run",
            "--eval-dir",
            str(tmp_path),
            "--agent-model",
            "openai:gpt-4o-mini",
            "--gateway-url",
            flagged.base_url.removesuffix("/v1"),
            env=env,
        )
    assert result.code == 0, result.err
    assert len(flagged.requests) == 1 and configured.requests == []  # the user's own flag overrides its variable
    assert flagged.headers[0]["Authorization"] == f"Bearer {KEY}"


@pytest.mark.parametrize(
    "given",
    ["http://127.0.0.1:4000", "http://127.0.0.1:4000/", "http://127.0.0.1:4000/v1", "http://127.0.0.1:4000/v1/"],
)
def test_a_gateway_url_is_taken_with_or_without_its_v1(given: str) -> None:
    from kindgi_eval.llm.gateway import completions_url

    # with /v1, as OPENAI_BASE_URL wants it, calls went to /v1/v1/chat/completions and every judge call was a 404
    assert completions_url(given) == "http://127.0.0.1:4000/v1/chat/completions"

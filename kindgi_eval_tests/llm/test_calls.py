"""The model registry and every model call's handling of provider faults: pure rules first, then litellm's real
client against a scripted OpenAI-compatible server on 127.0.0.1, counting the requests it saw."""

from __future__ import annotations

import asyncio
import logging
import re
import subprocess
import sys
import time
from email.utils import formatdate

import pytest

from kindgi_eval.llm.calls import (
    CREDENTIALS,
    CallPolicy,
    Circuit,
    CircuitPolicy,
    Fault,
    ModelCallError,
    RetryPolicy,
    complete,
    missing_credentials,
    parse_retry_after,
    retry_delay,
    scrub,
)
from kindgi_eval.rules.model_names import parse_model
from kindgi_eval.rules.verdicts import invalid_cause
from kindgi_eval_tests.fake_provider import Answer, scripted

FAST = CallPolicy(RetryPolicy(attempts=4, base_delay_s=0.01, max_delay_s=0.05))
MESSAGES = [{"role": "user", "content": "hi"}]
MODEL = parse_model("openai:fake")

# --- the registry ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ("gpt4", "'gpt4' is not a model name; write provider:model"),  # no provider at all
        (":x", "(the provider before ':' is empty)"),
        ("openai:", "(the model after ':' is empty)"),
        ("openai: gpt-4o", "(it contains whitespace)"),
        (" openai:gpt-4o", "(it contains whitespace)"),
        ("openai:gpt-4o\n", "(it contains whitespace)"),  # a trailing newline pasted from a file
        ("open/ai:gpt-4o", "the provider 'open/ai' may hold only"),
        ("openai:-x", "the model '-x' must start with a letter or digit"),
        ("", "'' is not a model name"),
    ],
)
def test_malformed_model_names_are_input_errors_naming_the_problem(name: str, problem: str) -> None:
    with pytest.raises(ValueError) as refused:
        parse_model(name)
    assert problem in str(refused.value)
    assert "write provider:model, e.g. openai:gpt-4o-mini or mock:agent" in str(refused.value)


@pytest.mark.parametrize(
    ("name", "litellm_name", "is_mock"),
    [
        ("openai:gpt-4o-mini", "openai/gpt-4o-mini", False),
        ("ollama:llama3:8b", "ollama/llama3:8b", False),  # the model may hold a colon
        ("openrouter:meta-llama/llama-3-8b", "openrouter/meta-llama/llama-3-8b", False),
        ("mock:agent", "mock/agent", True),  # resolved offline, never handed to litellm
    ],
)
def test_model_names_resolve_to_litellm_names(name: str, litellm_name: str, is_mock: bool) -> None:
    ref = parse_model(name)
    assert (ref.litellm_name, ref.is_mock, str(ref)) == (litellm_name, is_mock, name)


def test_the_offline_path_never_imports_litellm() -> None:
    code = (
        "import asyncio, sys\n"
        "from kindgi_eval.agents.factory import make_agent, make_judge\n"
        "from kindgi_eval.inputs.settings import RunSettings\n"
        "from kindgi_eval.inputs.tenant_file import load_tenant\n"
        "settings = RunSettings(agent_model='mock:agent', judge_model='mock:judge')\n"
        "make_agent(settings, load_tenant(None).tenant)\n"
        "asyncio.run(make_judge(settings).grade([], timeout_s=1))\n"
        "print('litellm' in sys.modules, 'httpx' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "False False", done.stderr


# --- pure: Retry-After, delays, the circuit, scrubbing ---------------------------------------------------------


@pytest.mark.parametrize(
    ("headers", "seconds"),
    [
        ({"Retry-After": "1"}, 1.0),
        ({"retry-after": "2.5"}, 2.5),
        ({"retry-after-ms": "1500", "Retry-After": "9"}, 1.5),  # OpenAI's finer header wins
        ({"Retry-After": formatdate(1_000_030, usegmt=True)}, 30.0),  # an HTTP date, 30 s after "now"
        ({"Retry-After": formatdate(999_000, usegmt=True)}, 0.0),  # a date in the past: no wait
        ({"Retry-After": "soon"}, None),
        ({"Retry-After": "-3"}, 0.0),
        ({}, None),
        (None, None),
    ],
)
def test_retry_after(headers, seconds) -> None:
    assert parse_retry_after(headers, now=1_000_000) == seconds


def fault(cause: str, status: int | None = None, retry_after: float | None = None) -> Fault:
    return Fault(cause, status, retry_after, "detail")  # type: ignore[arg-type]


POLICY = RetryPolicy(attempts=4, base_delay_s=0.5, max_delay_s=8.0)


@pytest.mark.parametrize(
    ("attempt", "the_fault", "remaining", "rand", "delay"),
    [
        (1, fault("server", 500), 60, 0.0, 0.25),  # equal jitter: half of base * 2**0 at least...
        (1, fault("server", 500), 60, 1.0, 0.5),  # ...and the whole of it at most
        (3, fault("server", 503), 60, 0.0, 1.0),  # doubled twice: half of 2.0
        (3, fault("rate_limit", 429), 60, 1.0, 2.0),
        (4, fault("server", 500), 60, 0.0, None),  # the 4th attempt was the last
        (1, fault("rate_limit", 429, retry_after=1.0), 60, 0.0, 1.0),  # Retry-After honoured exactly...
        (1, fault("rate_limit", 429, retry_after=1.0), 60, 1.0, 1.1),  # ...plus up to 10% jitter
        (2, fault("server", 503, retry_after=20.0), 60, 0.0, 20.0),  # longer than max_delay: still honoured
        (1, fault("rate_limit", 429, retry_after=30.0), 10, 0.0, None),  # but not past the call's timeout
        (1, fault("server", 500), 0.1, 0.0, None),  # no time left for even the shortest wait
        (1, fault("input", 400), 60, 0.0, None),  # an input error is never retried
        (1, fault("input", 401), 60, 0.0, None),
        (1, fault("timeout", 408), 60, 0.0, None),  # a timeout has used the call's budget up
    ],
)
def test_retry_delay(attempt: int, the_fault: Fault, remaining: float, rand: float, delay: float | None) -> None:
    waited = retry_delay(POLICY, attempt, the_fault, remaining, rand)
    assert waited is None if delay is None else waited == pytest.approx(delay)


def test_delays_are_capped_at_max_delay() -> None:
    assert (
        retry_delay(RetryPolicy(attempts=20, base_delay_s=0.5, max_delay_s=8.0), 10, fault("server", 500), 60, 1.0)
        == 8.0
    )


def test_circuit_opens_only_after_enough_failures_over_the_window() -> None:
    circuit = Circuit("openai", CircuitPolicy(failures=3, window_s=10, cooldown_s=30))
    for now in (0, 1, 2, 3):  # four failures, but within 3 s: a blip, still closed
        circuit.failed(now, "HTTP 500: down")
    assert circuit.allows(3)
    circuit.failed(10, "HTTP 500: down")  # five in a row spanning 10 s: open
    assert not circuit.allows(10) and not circuit.allows(39.9)
    assert "failed every attempt for 10 s (5 in a row; the last: HTTP 500: down)" in circuit.refusal(10)
    assert circuit.allows(40)  # after the cooldown a call may go out...
    circuit.failed(40.5, "HTTP 500: still down")  # ...and one more failure reopens it at once
    assert not circuit.allows(41)


def test_a_success_closes_the_circuit_and_forgets_the_streak() -> None:
    circuit = Circuit("openai", CircuitPolicy(failures=3, window_s=10, cooldown_s=30))
    for now in (0, 5, 10):
        circuit.failed(now, "HTTP 500")
    assert not circuit.allows(11)
    circuit.succeeded()
    assert circuit.allows(11)
    for now in (12, 13, 14):  # a new streak starts its own window
        circuit.failed(now, "HTTP 500")
    assert circuit.allows(14)


@pytest.mark.parametrize(
    ("text", "scrubbed"),
    [
        ("Incorrect API key provided: sk-proj-abcdef123456", "Incorrect API key provided: [redacted]"),
        ("header Authorization: Bearer abc.def-123", "header Authorization: Bearer [redacted]"),
        ('{"api_key": "zzz-123"}', '{"api_key": "[redacted]"}'),
        (
            "POST https://agent.example/reply?token=t0p-s3cret&x=1",
            "POST https://agent.example/reply?token=[redacted]&x=1",
        ),
        ("the env value MY-VERY-OWN-SECRET leaked", "the env value [redacted] leaked"),  # a *_TOKEN variable's value
        ("prompt_tokens=100 max_tokens: 5", "prompt_tokens=100 max_tokens: 5"),  # not credentials
    ],
)
def test_scrub_takes_credentials_out(text: str, scrubbed: str) -> None:
    assert scrub(text, environ={"ACME_TOKEN": "MY-VERY-OWN-SECRET", "HOME": "/root"}) == scrubbed


# --- litellm's real client against a scripted server -----------------------------------------------------------


def call(policy: CallPolicy = FAST, timeout_s: float = 10, role: str = "agent"):
    return asyncio.run(complete(MODEL, MESSAGES, timeout_s=timeout_s, role=role, policy=policy))  # type: ignore[arg-type]


def test_a_well_formed_answer_with_tokens_and_an_unknown_price(provider_env) -> None:
    server = provider_env(scripted(Answer("hello")))
    completion = call()
    assert completion.content == "hello"
    assert (completion.usage.prompt_tokens, completion.usage.completion_tokens) == (100, 20)
    assert (completion.usage.cost_usd, completion.usage.cost_known) == (0.0, False)  # litellm cannot price "fake"
    assert len(server.requests) == 1
    assert server.requests[0]["model"] == "fake"
    headers = {k.lower(): v for k, v in server.headers[0].items()}
    assert headers["authorization"] == "Bearer sk-test-not-a-real-key"


def test_a_priced_model_has_a_known_cost(provider_env) -> None:
    provider_env(scripted(Answer("hello")))
    completion = asyncio.run(complete(parse_model("openai:gpt-4o-mini"), MESSAGES, timeout_s=10, role="judge"))
    assert completion.usage.cost_known and completion.usage.cost_usd > 0


def test_429_with_retry_after_waits_then_succeeds(provider_env) -> None:
    server = provider_env(
        scripted(
            Answer(status=429, raw_body=b'{"error": {"message": "slow down"}}', headers={"Retry-After": "1"}),
            Answer("ok"),
        )
    )
    started = time.monotonic()
    assert call().content == "ok"
    assert time.monotonic() - started >= 1.0  # the provider's wait, not the 10 ms backoff base
    assert len(server.requests) == 2


def test_500_twice_then_success(provider_env) -> None:
    down = Answer(status=500, raw_body=b'{"error": {"message": "boom"}}')
    server = provider_env(scripted(down, down, Answer("ok")))
    completion = call()
    assert completion.content == "ok"
    assert len(server.requests) == 3
    assert completion.latency_ms >= 10  # the latency covers the retries too


def test_500_on_every_attempt_gives_up_after_the_policy_s_attempts(provider_env) -> None:
    server = provider_env(scripted(Answer(status=500, raw_body=b'{"error": {"message": "boom"}}')))
    with pytest.raises(ModelCallError) as failed:
        call()
    assert len(server.requests) == FAST.retry.attempts == failed.value.attempts
    assert str(failed.value).startswith("openai:fake: HTTP 500 on every attempt (4 attempts in ")
    assert str(failed.value).endswith("boom")


@pytest.mark.parametrize("status", [400, 404, 422])
def test_an_input_error_is_not_retried(provider_env, status: int) -> None:
    server = provider_env(scripted(Answer(status=status, raw_body=b'{"error": {"message": "bad request"}}')))
    with pytest.raises(ModelCallError) as failed:
        call()
    assert len(server.requests) == 1
    assert failed.value.fault == "input"
    assert f"the provider refused the request (HTTP {status}), which a retry would not change" in str(failed.value)


@pytest.mark.parametrize("status", [401, 403])
def test_a_refused_key_is_an_auth_fault_and_never_retried(provider_env, status: int) -> None:
    server = provider_env(scripted(Answer(status=status, raw_body=b'{"error": {"message": "invalid api key"}}')))
    with pytest.raises(ModelCallError) as failed:
        call()
    assert len(server.requests) == 1 and failed.value.attempts == 1
    assert failed.value.fault == "auth"
    assert f"the provider refused the credentials (HTTP {status}), which a retry would not change" in str(failed.value)


def test_a_call_with_no_key_at_all_is_an_auth_fault_and_never_retried(provider_env, monkeypatch) -> None:
    # litellm reports the OpenAI client's "Missing credentials" as an HTTP 500, which would otherwise be retried 4 times
    server = provider_env(scripted(Answer("never sent")))
    monkeypatch.delenv("OPENAI_API_KEY")
    with pytest.raises(ModelCallError) as failed:
        call()
    assert server.requests == [] and failed.value.attempts == 1
    assert failed.value.fault == "auth" and "Missing credentials" in str(failed.value)
    assert invalid_cause(f"error: ModelCallError: {failed.value}") == "missing credentials"


@pytest.mark.parametrize("provider", sorted(CREDENTIALS))
def test_the_credential_variables_checked_before_a_run_are_litellm_s_own(provider: str, monkeypatch) -> None:
    import litellm

    for name in {n for names in CREDENTIALS.values() for n in names}:
        monkeypatch.delenv(name, raising=False)
    model = f"{provider}/some-model"
    assert missing_credentials(provider, {}) == CREDENTIALS[provider]
    assert set(CREDENTIALS[provider]) <= set(litellm.validate_environment(model=model)["missing_keys"])
    for name in CREDENTIALS[provider]:  # any one of them is enough, for litellm too
        monkeypatch.setenv(name, "set")
        assert missing_credentials(provider, {name: "set"}) == ()
        assert litellm.validate_environment(model=model)["keys_in_environment"] is True
        monkeypatch.delenv(name)


def test_a_timeout_ends_the_call_without_a_retry(provider_env) -> None:
    server = provider_env(scripted(Answer("late", delay_s=3)))
    started = time.monotonic()
    with pytest.raises(ModelCallError) as failed:
        call(timeout_s=0.5)
    assert time.monotonic() - started < 2
    assert len(server.requests) == 1
    assert failed.value.fault == "timeout"
    assert "no answer within the 0.5 s call timeout" in str(failed.value)


def test_a_body_that_is_not_json_is_a_server_error_and_retried(provider_env) -> None:
    server = provider_env(scripted(Answer(raw_body=b"<html>Bad gateway</html>"), Answer("ok")))
    assert call().content == "ok"
    assert len(server.requests) == 2


def test_a_retry_after_longer_than_the_call_timeout_is_not_waited_for(provider_env) -> None:
    server = provider_env(scripted(Answer(status=429, raw_body=b"{}", headers={"Retry-After": "30"}), Answer("ok")))
    started = time.monotonic()
    with pytest.raises(ModelCallError) as failed:
        call(timeout_s=5)
    assert time.monotonic() - started < 2
    assert len(server.requests) == 1
    assert "the Retry-After of 30 s outlasts the 5 s call timeout" in str(failed.value)


def test_a_provider_that_fails_every_call_for_a_while_is_left_alone(provider_env) -> None:
    server = provider_env(scripted(Answer(status=503, raw_body=b'{"error": {"message": "down"}}')))
    policy = CallPolicy(
        RetryPolicy(attempts=2, base_delay_s=0.01), CircuitPolicy(failures=4, window_s=0.2, cooldown_s=60)
    )
    errors = []
    for _ in range(40):
        try:
            call(policy)
        except ModelCallError as e:
            errors.append(e)
    sent = len(server.requests)
    assert sent < 40 * 2  # the circuit opened: far fewer requests than 40 calls x 2 attempts
    refused = [e for e in errors if e.fault == "circuit_open"]
    assert len(errors) == 40 and refused  # every call failed; the later ones without a request
    assert refused[-1].attempts == 0  # once open, a call sends nothing (one in its backoff may have sent one)
    assert sum(e.attempts for e in errors) == sent  # every request the server saw is an attempt we counted
    assert str(refused[-1]).startswith("openai was not called: its circuit is open because it failed every attempt")
    assert "HTTP 503" in str(refused[-1])


def test_judge_calls_retry_too(provider_env) -> None:
    server = provider_env(scripted(Answer(status=502, raw_body=b"{}"), Answer('{"verdict": "pass"}')))
    assert call(role="judge").content == '{"verdict": "pass"}'
    assert len(server.requests) == 2


def test_every_call_is_logged_tagged_agent_or_judge_with_tokens_cost_and_latency(provider_env, caplog) -> None:
    provider_env(scripted(Answer(status=500, raw_body=b"{}"), Answer("ok")))
    caplog.set_level(logging.INFO, logger="kindgi_eval.llm.calls")
    call(role="agent")
    call(role="judge")
    lines = [r.getMessage() for r in caplog.records if r.name == "kindgi_eval.llm.calls"]
    assert re.fullmatch(
        r"agent call to openai:fake: 2 attempt\(s\), \d+ ms, 100\+20 tokens, \$0\.000000 \(price unknown\)", lines[0]
    )
    assert lines[1].startswith("judge call to openai:fake: 1 attempt(s), ")


def test_every_provider_taken_as_known_without_asking_is_one_the_installed_litellm_routes() -> None:
    from kindgi_eval.llm import WELL_KNOWN_PROVIDERS, provider_names

    assert WELL_KNOWN_PROVIDERS <= provider_names(), sorted(WELL_KNOWN_PROVIDERS - provider_names())

"""The real LiteLLM gateway: the proxy started from deploy/litellm.yaml on 127.0.0.1, as deploy/production.py starts
it, its OpenAI entry routed to a scripted OpenAI-compatible server, and a whole `kindgi-eval run`, agent and judge,
sent through it. The proxy comes with the `profile` extra; .ci/run installs it and sets KINDGI_REQUIRE_GATEWAY=1, so
there a missing proxy fails the test."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from importlib.util import find_spec
from pathlib import Path

import pytest

from kindgi_eval.llm.calls import RetryPolicy
from kindgi_eval.prompts.judge import CRITERION_HEAD
from kindgi_eval_tests.conftest import run_cli
from kindgi_eval_tests.defs.test_judged_runs import Judge, calibration_lines, case, write_suite
from kindgi_eval_tests.fake_provider import Answer, FakeProvider, user_text
from kindgi_eval_tests.gateway_config import GATEWAY_CONFIG, with_openai_rpm

pytestmark = [pytest.mark.long, pytest.mark.xdist_group("litellm-proxy")]
PROXY = Path(sys.executable).parent / "litellm"
MASTER_KEY = "sk-gateway-test-master-key"
PROVIDER_KEY = "sk-provider-key-held-by-the-gateway"
START_S = 120.0
"""The proxy serves in some 17 s here; the test waits for it this long."""
REPLY = json.dumps(
    {
        "messages": ["The Foundation Course is $450. Would you pay upfront or in instalments?"],
        "escalate": False,
        "reason": None,
    }
)


def proxy_installed() -> None:
    """The proxy needs litellm's `proxy` extra (the `profile` extra installs it)."""
    missing = [module for module in ("apscheduler", "backoff", "fastapi_sso") if find_spec(module) is None]
    if PROXY.exists() and not missing:
        return
    reason = (
        f"no LiteLLM proxy: {', '.join(missing) or PROXY} missing; pip install -e '.[profile]' installs litellm[proxy]"
    )
    if os.environ.get("KINDGI_REQUIRE_GATEWAY") == "1":
        pytest.fail(reason)
    pytest.skip(reason)


JUDGE = Judge()


BROKEN = "gpt-broken"
"""A model the provider answers 500 for, every time."""


def provider(request: dict) -> Answer:
    """The provider behind the gateway: the agent quotes the price, the judge is the judged runs' scripted one; the
    model BROKEN fails."""
    if request.get("model") == BROKEN:
        return Answer(status=500, raw_body=b'{"error": {"message": "the upstream is down", "type": "server_error"}}')
    if CRITERION_HEAD in user_text(request):
        return JUDGE(request)
    return Answer(REPLY)


@contextmanager
def proxy(config: Path, upstream: FakeProvider, log: Path) -> Iterator[str]:
    """The proxy started from `config` on a free port of 127.0.0.1, routing OpenAI's models to `upstream`; its URL.
    Stopped by its PID."""
    proxy_installed()
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    with log.open("wb") as out:
        env = {
            **os.environ,
            "LITELLM_MASTER_KEY": MASTER_KEY,
            "OPENAI_API_KEY": PROVIDER_KEY,
            "OPENAI_BASE_URL": upstream.base_url,
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        }
        process = subprocess.Popen(
            [str(PROXY), "--config", str(config), "--host", "127.0.0.1", "--port", str(port)],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
        try:
            url = f"http://127.0.0.1:{port}"
            started = time.monotonic()
            while not serves(f"{url}/health/liveliness"):
                assert process.poll() is None, log.read_text(errors="replace")[-3000:]
                assert time.monotonic() - started < START_S, log.read_text(errors="replace")[-3000:]
                time.sleep(0.25)
            print(f"the proxy served after {time.monotonic() - started:.1f} s")
            yield url
        finally:
            process.terminate()
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, FakeProvider]]:
    """The proxy from deploy/litellm.yaml before the fake provider; its URL and the provider."""
    proxy_installed()
    with (
        FakeProvider(provider) as upstream,
        proxy(GATEWAY_CONFIG, upstream, tmp_path_factory.mktemp("gateway") / "proxy.log") as url,
    ):
        yield url, upstream


def serves(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status == 200
    except OSError:
        return False


def test_a_judged_run_through_the_real_proxy_completes_with_the_keys_in_the_gateway_alone(
    home, gateway, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url, upstream = gateway
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    suite = write_suite(tmp_path / "suite", [case("price", review="The reply is polite")], calibration_lines())
    out = tmp_path / "summary.json"
    seen = len(upstream.requests)
    result = run_cli(
        "run",
        "--eval-dir",
        str(suite),
        "--agent-model",
        "openai:gpt-4o-mini",
        "--judge-model",
        "openai:gpt-4o",
        "--json",
        str(out),
        env={"KINDGI_GATEWAY_URL": url, "KINDGI_GATEWAY_KEY": MASTER_KEY},
    )
    assert result.code == 0, result.err
    summary = json.loads(out.read_text())
    assert summary["counts"]["judged-pass"] == 1 and all(g["calibrated"] for g in summary["calibration"].values()), (
        summary
    )
    asked = upstream.requests[seen:]
    # the wildcard routed each by its name: one agent call, the judge's on the calibration set and the case
    assert Counter(r["model"] for r in asked) == {"gpt-4o-mini": 1, "gpt-4o": len(asked) - 1} and len(asked) > 1
    assert {{k.lower(): v for k, v in h.items()}["authorization"] for h in upstream.headers[seen:]} == {
        f"Bearer {PROVIDER_KEY}"
    }  # the gateway's key


def test_a_wrong_key_is_refused_by_the_proxy_and_not_retried(home, gateway, tmp_path: Path) -> None:
    url, upstream = gateway
    (tmp_path / "cases.jsonl").write_text(json.dumps({"id": "c", "text": "hi", "expect": {"escalate": False}}) + "\n")
    seen = len(upstream.requests)
    result = run_cli(
        "run",
        "--eval-dir",
        str(tmp_path),
        "--agent-model",
        "openai:gpt-4o-mini",
        "--json",
        str(tmp_path / "s.json"),
        env={"KINDGI_GATEWAY_URL": url, "KINDGI_GATEWAY_KEY": "sk-not-the-master-key"},
    )
    assert result.code == 1, result.err
    (failed,) = json.loads((tmp_path / "s.json").read_text())["cases"]
    assert "1 attempt" in failed["failures"][0] and "sk-not-the-master-key" not in result.out + result.err
    assert len(upstream.requests) == seen  # nothing reached the provider


def cases_file(folder: Path, n: int) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "cases.jsonl").write_text(
        "".join(
            json.dumps({"id": f"c{i}", "text": "how much is it?", "expect": {"escalate": False}}) + "\n"
            for i in range(n)
        )
    )
    return folder


def test_a_server_error_is_retried_by_the_client_alone_so_the_provider_sees_exactly_its_attempts(
    home, gateway, tmp_path: Path
) -> None:
    url, upstream = gateway
    seen = len(upstream.requests)
    result = run_cli(
        "run",
        "--eval-dir",
        str(cases_file(tmp_path / "suite", 1)),
        "--agent-model",
        f"openai:{BROKEN}",
        "--json",
        str(tmp_path / "s.json"),
        env={"KINDGI_GATEWAY_URL": url, "KINDGI_GATEWAY_KEY": MASTER_KEY},
    )
    assert result.code == 1, result.err
    (failed,) = json.loads((tmp_path / "s.json").read_text())["cases"]
    attempts = RetryPolicy().attempts
    assert f"{attempts} attempts" in failed["failures"][0], failed
    assert [r["model"] for r in upstream.requests[seen:]] == [BROKEN] * attempts  # none added by the gateway


PACED_RPM = 3


def test_the_gateway_paces_a_burst_to_the_providers_requests_per_minute_and_every_call_is_answered(
    home, tmp_path: Path
) -> None:
    # deploy/litellm.yaml with OpenAI's budget cut to 3 requests a minute; five calls at once: three go out, the
    # other two wait in the gateway for the next minute and are answered then, none refused (the call's timeout and
    # the agent's latency deadline outlast the wait, which is latency like any other)
    config, _ = with_openai_rpm(tmp_path, PACED_RPM)
    asked: list[float] = []
    with (
        FakeProvider(lambda body: asked.append(time.time()) or Answer(REPLY)) as upstream,
        proxy(config, upstream, tmp_path / "proxy.log") as url,
    ):
        result = run_cli(
            "run",
            "--eval-dir",
            str(cases_file(tmp_path / "suite", PACED_RPM + 2)),
            "--agent-model",
            "openai:gpt-4o-mini",
            "--json",
            str(tmp_path / "s.json"),
            env={
                "KINDGI_GATEWAY_URL": url,
                "KINDGI_GATEWAY_KEY": MASTER_KEY,
                "EVAL_CONCURRENCY": str(PACED_RPM + 2),
                "EVAL_MODEL_TIMEOUT_S": "150",
                "EVAL_MAX_LATENCY_MS": "150000",
            },
        )  # a wait counts as latency
    assert result.code == 0, result.out + result.err
    assert json.loads((tmp_path / "s.json").read_text())["counts"]["passed"] == PACED_RPM + 2
    assert len(asked) == PACED_RPM + 2  # one request per call: none refused and asked again
    per_minute = Counter(int(t // 60) for t in asked)  # the gateway's budget is per minute of the clock
    assert max(per_minute.values()) <= PACED_RPM and len(per_minute) >= 2, per_minute

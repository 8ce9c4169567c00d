"""An HTTP agent's answer over BODY_LIMIT fails its case with the error recorded, having read no more than the limit;
the run goes on. Against servers on 127.0.0.1 started here."""

from __future__ import annotations

import asyncio
import json
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import pytest

from kindgi_eval.agents.http import BODY_LIMIT, HttpAgent
from kindgi_eval.defs.runs import open_instance, run_chain
from kindgi_eval.inputs.settings import RunSettings
from kindgi_eval.inputs.suite_folder import suite_key
from kindgi_eval.steps.agent_replies import collect_replies
from kindgi_eval.store.layout import SHARED, read_rows
from kindgi_eval.store.rows import ReplyRow
from kindgi_eval_tests.agents.test_fuzzed_bodies import TURN, AgentServer, Body
from kindgi_eval_tests.fake_provider import Answer, FakeProvider

MIB = 1 << 20
GOOD = {"messages": ["The Foundation Course is $450."], "escalate": False, "reason": None}


def padded(value: object, size: int) -> bytes:
    """`value` as JSON, padded with trailing spaces to exactly `size` bytes."""
    text = json.dumps(value).encode()
    return text + b" " * (size - len(text))


@pytest.fixture
def server() -> Iterator[AgentServer]:
    """A server, asked once before any test measures: what the first request imports (httpx's transport, h11) is
    then held already, and a peak counts the answer alone."""
    with AgentServer().running() as serving:
        serving.next = Body(200, "application/json", None, json.dumps(GOOD).encode(), None, "length", None)
        asyncio.run(collect_replies(HttpAgent(serving.url, timeout_s=10), [TURN], concurrency=1, deadline_ms=20_000))
        yield serving


def ask(server: AgentServer, body: Body) -> tuple[ReplyRow, int]:
    """The row of one case answered with `body`, and the most memory Python held meanwhile (tracemalloc's peak)."""
    server.next = body
    agent = HttpAgent(server.url, timeout_s=10)
    tracemalloc.start()
    try:
        (row,) = asyncio.run(collect_replies(agent, [TURN], concurrency=1, deadline_ms=20_000))
        return row, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_an_answer_of_exactly_the_limit_is_read(server: AgentServer) -> None:
    row, _ = ask(server, Body(200, "application/json", None, padded(GOOD, BODY_LIMIT), None, "length", None))
    assert (row.error, row.messages) == (None, GOOD["messages"])


@pytest.mark.parametrize("framing", ["chunked", "close"])
def test_a_50_mb_answer_without_a_length_is_refused_after_the_limit(server: AgentServer, framing: str) -> None:
    row, peak = ask(server, Body(200, "application/json", None, json.dumps(GOOD).encode(), 50 * MIB, framing, None))
    assert row.error == (
        "the agent's answer (HTTP 200) holds more, over the limit of 1 MiB for an answer; it was read no further. "
        "Keep the agent's answers under 1 MiB."
    )
    assert row.raw is not None and row.raw.startswith('{"messages": ["The Foundation') and len(row.raw) == 4096
    # 50 MB sent; what was held is the limit and a few copies of it, never the body. The peak counts the server's
    # thread in this process too, and how much of the body is in flight when the read stops depends on the machine's load.
    assert peak < 8 * BODY_LIMIT


def test_a_declared_length_over_the_limit_is_refused_unread(server: AgentServer) -> None:
    row, peak = ask(server, Body(503, "text/html", None, b"<html>", 50 * MIB, "length", None))
    assert row.error == (
        "the agent's answer (HTTP 503) is 50 MiB (52,428,800 bytes), over the limit of 1 MiB for an answer; it was "
        "read no further. Keep the agent's answers under 1 MiB."
    )
    assert row.raw is None and peak < BODY_LIMIT


def test_a_compressed_answer_is_refused(server: AgentServer) -> None:
    row, _ = ask(server, Body(200, "application/json", None, b"\x1f\x8b", None, "length", None, gzip=True))
    assert row.error == (
        "the agent answered HTTP 200 with Content-Encoding 'gzip', though the request asked for none (identity). "
        "Serve the answer uncompressed."
    )


def test_a_run_goes_on_past_an_answer_over_the_limit(home, tmp_path: Path) -> None:
    folder = tmp_path / "big-answers"
    folder.mkdir()
    cases = [{"id": c, "text": f"tell me about {c}", "expect": {"escalate": False}} for c in ("small", "huge", "after")]
    (folder / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    huge = padded(GOOD, BODY_LIMIT + 1)

    def service(request: dict) -> Answer:
        return Answer(raw_body=huge if request["case_id"] == "huge" else json.dumps(GOOD).encode())

    key = suite_key("demo-academy", folder)
    with FakeProvider(service) as agent:
        run_id = run_chain(
            open_instance(home.root),
            home.root,
            RunSettings(eval_dir=str(folder), agent_url=agent.base_url),
            key,
            "conversation",
        )
    statuses = {s.case_id: s for s in read_rows(home.store, SHARED.statuses, key, run_id)}
    assert {c: s.status for c, s in statuses.items()} == {"small": "passed", "huge": "failed", "after": "passed"}
    assert statuses["huge"].error == (
        "the agent's answer (HTTP 200) is 1.0 MiB (1,048,577 bytes), over the limit of 1 MiB for an answer; it was "
        "read no further. Keep the agent's answers under 1 MiB."
    )

"""The HTTP agent (`AGENT_URL`) against a server on 127.0.0.1: the request body
docs/running.md#evaluating-an-agent-over-http shows, exactly, and every way an answer can fail its case while the run
goes on."""

from __future__ import annotations

import asyncio
import json
import socket
from pathlib import Path
from typing import Any

import pytest

from kindgi_eval.agents.factory import make_agent
from kindgi_eval.agents.http import HttpAgent, display_url, read_answer, request_body
from kindgi_eval.agents.litellm import LitellmAgent
from kindgi_eval.agents.mock import MockAgent
from kindgi_eval.defs.runs import open_instance, run_chain
from kindgi_eval.inputs.settings import RunSettings
from kindgi_eval.inputs.suite_folder import suite_key
from kindgi_eval.inputs.tenant_file import load_tenant
from kindgi_eval.rules.agent_protocol import AgentReply, AgentTurn
from kindgi_eval.rules.cases import Contact, Turn
from kindgi_eval.rules.errors import InputError
from kindgi_eval.steps.agent_replies import ReplyError, collect_replies
from kindgi_eval.store.layout import SHARED, read_rows
from kindgi_eval.store.rows import ReplyRow
from kindgi_eval_tests.fake_provider import Answer, FakeProvider

TENANT = load_tenant(None).tenant
GOOD = {
    "messages": ["The Foundation Course is $450.", "Would you like to pay upfront or in instalments?"],
    "escalate": False,
    "reason": None,
}


def turn(case_id: str = "c1", text: str = "how much is the foundation course?", **fields: Any) -> AgentTurn:
    return AgentTurn(tenant=TENANT.tenant, case_id=case_id, text=text, **fields)


def body(value: object) -> Answer:
    return Answer(raw_body=json.dumps(value).encode())


def ask(url: str, *turns: AgentTurn, timeout_s: float = 5, deadline_ms: float = 10_000) -> list[ReplyRow]:
    agent = HttpAgent(url, timeout_s=timeout_s)
    return asyncio.run(collect_replies(agent, turns, concurrency=4, deadline_ms=deadline_ms))


# --- the request body ------------------------------------------------------------------------------------------


def test_the_request_body_is_exactly_design_s() -> None:
    with_everything = turn(
        "objection",
        "too much",
        history=(Turn(role="user", text="how much?"), Turn(role="agent", text="$450. Upfront or instalments?")),
        contact=Contact(funnel_stage="offer", course="foundation"),
    )
    assert request_body(with_everything) == {
        "tenant": "demo-academy",
        "case_id": "objection",
        "text": "too much",
        "history": [{"role": "user", "text": "how much?"}, {"role": "agent", "text": "$450. Upfront or instalments?"}],
        "contact": {"funnel_stage": "offer", "course": "foundation"},
        "nudge": False,
    }
    bare = request_body(turn("nudge", "", nudge=True, contact=Contact(funnel_stage="discovery")))
    assert bare == {
        "tenant": "demo-academy",
        "case_id": "nudge",
        "text": "",
        "history": [],
        "contact": {"funnel_stage": "discovery", "course": None},
        "nudge": True,
    }
    assert request_body(turn())["contact"] is None  # a new contact is null, not {}


def test_the_server_receives_the_body_and_the_reply_is_recorded() -> None:
    with FakeProvider(lambda request: body(GOOD)) as server:
        the_turn = turn(contact=Contact(funnel_stage="offer", course="foundation"))
        (row,) = ask(server.base_url + "/reply", the_turn)
    assert server.requests == [request_body(the_turn)]
    assert (row.messages, row.escalate, row.reason, row.error) == (GOOD["messages"], False, None, None)
    assert (row.cost_usd, row.cost_known) == (0.0, False)  # what the service spends is not known here
    assert row.agent == server.base_url + "/reply"


# --- reading the answer (pure) ----------------------------------------------------------------------------------


def test_a_well_formed_answer() -> None:
    escalation = {"messages": ["A person will reply."], "escalate": True, "reason": "refund_request"}
    assert read_answer(200, json.dumps(escalation)) == AgentReply(
        messages=("A person will reply.",), escalate=True, reason="refund_request"
    )


@pytest.mark.parametrize(
    ("status", "text", "problem"),
    [
        (503, "upstream busy", "the agent answered HTTP 503: upstream busy"),
        (404, "", "the agent answered HTTP 404: (empty body)"),
        (302, "", "the agent answered HTTP 302"),  # a redirect is not followed
        (200, "<html>hello</html>", "the agent's answer is not JSON"),
        (200, '["hi"]', "the agent's answer is JSON but not an object"),
        (200, '{"messages": "hi", "escalate": false, "reason": null}', "messages: Input should be a valid list"),
        (200, '{"messages": ["hi"], "escalate": "no", "reason": null}', "escalate: Input should be a valid boolean"),
        (200, '{"messages": ["hi"], "escalate": false}', "reason: Field required"),
        (
            200,
            '{"messages": ["hi"], "escalate": false, "reason": null, "debug": 1}',
            "debug: Extra inputs are not permitted",
        ),
        (200, '{"messages": [1], "escalate": false, "reason": null}', "messages.0: Input should be a valid string"),
    ],
)
def test_an_answer_of_the_wrong_kind_is_a_reply_error_keeping_the_body(status: int, text: str, problem: str) -> None:
    with pytest.raises(ReplyError) as refused:
        read_answer(status, text)
    assert problem in str(refused.value)
    assert refused.value.raw == text


# --- failure modes against a live server: each fails its case, the run goes on -------------------------------


def test_every_failure_mode_fails_only_its_own_case() -> None:
    answers = {
        "ok": body(GOOD),
        "server-error": Answer(status=500, raw_body=b"Internal Server Error"),
        "not-json": Answer(raw_body=b"Thanks for your message!"),
        "wrong-shape": body({"reply": "hi"}),
        "slow": Answer(raw_body=json.dumps(GOOD).encode(), delay_s=2),
    }
    with FakeProvider(lambda request: answers[request["case_id"]]) as server:
        rows = {r.case_id: r for r in ask(server.base_url, *[turn(case_id) for case_id in answers], timeout_s=0.5)}
    assert rows["ok"].error is None and rows["ok"].messages == GOOD["messages"]
    assert rows["server-error"].error == "the agent answered HTTP 500: Internal Server Error"
    assert rows["server-error"].raw == "Internal Server Error"
    assert rows["not-json"].error.startswith("the agent's answer is not JSON")
    assert rows["not-json"].raw == "Thanks for your message!"
    assert rows["wrong-shape"].error.startswith("the agent's answer has the wrong shape (messages: Field required;")
    assert rows["slow"].error == f"the agent at {server.base_url} did not answer within 0.5 s"
    assert all(rows[c].escalate is None and rows[c].messages == [] for c in answers if c != "ok")
    assert len(server.requests) == len(answers)  # one request per case: the HTTP agent is never retried


def test_an_agent_that_cannot_be_reached_fails_the_case() -> None:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    (row,) = ask(f"http://127.0.0.1:{port}/reply", turn())
    assert row.error.startswith(f"the agent at http://127.0.0.1:{port}/reply could not be reached: ConnectError")


def test_the_deadline_races_the_http_agent_too() -> None:
    with FakeProvider(lambda request: Answer(raw_body=json.dumps(GOOD).encode(), delay_s=0.5)) as server:
        (late,) = ask(server.base_url, turn(), deadline_ms=400)  # late after 400 ms, given up after 800
    assert late.error is None and late.latency_ms > 400  # late but kept: the latency assertion fails it


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("https://agent.example.com/reply", "https://agent.example.com/reply"),
        ("https://bot:hunter22@agent.example.com:8443/reply", "https://agent.example.com:8443/reply"),
        (
            "https://agent.example.com/reply?api_key=abc123&v=2",
            "https://agent.example.com/reply?api_key=[redacted]&v=2",
        ),
    ],
)
def test_runs_record_the_url_without_credentials(url: str, shown: str) -> None:
    assert display_url(url) == shown


# --- choosing the agent ------------------------------------------------------------------------------------------


def test_make_agent_prefers_the_url_then_the_model(monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    assert isinstance(
        make_agent(RunSettings(agent_url="http://127.0.0.1:9/a", agent_model="openai:x"), TENANT), HttpAgent
    )
    assert isinstance(make_agent(RunSettings(agent_model="openai:gpt-4o-mini"), TENANT), LitellmAgent)
    assert isinstance(make_agent(RunSettings(agent_model="mock:agent"), TENANT), MockAgent)


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        (RunSettings(), "no agent named. Set AGENT_MODEL or AGENT_URL"),
        (
            RunSettings(agent_model="mock:judge"),
            "AGENT_MODEL: 'mock:judge' is not an offline agent; the offline agent is mock:agent (mock:judge is the offline judge).",
        ),
    ],
)
def test_make_agent_refuses_what_cannot_answer(settings: RunSettings, message: str) -> None:
    with pytest.raises(InputError) as refused:
        make_agent(settings, TENANT)
    assert message in str(refused.value)


# --- a whole run through a service -----------------------------------------------------------------------------


def service(request: dict) -> Answer:
    """A tenant's own agent, as it might run in another language: it escalates refunds and quotes prices."""
    if "refund" in request["text"]:
        return body({"messages": ["A person will take it from here."], "escalate": True, "reason": "refund_request"})
    if request["case_id"] == "broken":
        return Answer(status=502, raw_body=b"Bad Gateway")
    return body(
        {"messages": ["The Foundation Course is $450. Upfront or instalments?"], "escalate": False, "reason": None}
    )


def test_a_run_evaluates_an_agent_served_over_http(home, tmp_path: Path) -> None:
    cases = [
        {
            "id": "price",
            "text": "how much is the foundation course?",
            "expect": {"escalate": False},
            "must_contain": ["$450"],
        },
        {"id": "refund", "text": "I want a refund", "expect": {"escalate": True, "reason": "refund_request"}},
        {"id": "broken", "text": "hello", "expect": {"escalate": False}},
    ]
    folder = tmp_path / "svc"
    folder.mkdir()
    (folder / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    key = suite_key(TENANT.tenant, folder)
    with FakeProvider(service) as server:
        settings = RunSettings(eval_dir=str(folder), agent_url=server.base_url + "/agent")
        run_id = run_chain(open_instance(home.root), home.root, settings, key, "conversation")
    statuses = {s.case_id: s for s in read_rows(home.store, SHARED.statuses, key, run_id)}
    assert {k: s.status for k, s in statuses.items()} == {"price": "passed", "refund": "passed", "broken": "failed"}
    assert statuses["broken"].error == "the agent answered HTTP 502: Bad Gateway"
    assert sorted(r["case_id"] for r in server.requests) == ["broken", "price", "refund"]


# --- AGENT_HEADERS ----------------------------------------------------------------------------------------------


def test_agent_headers_go_only_to_the_agent_url_of_the_same_environment(monkeypatch) -> None:
    from kindgi_eval.agents.factory import agent_headers

    with FakeProvider(lambda request: body(GOOD)) as server:
        url = server.base_url + "/reply"
        monkeypatch.setenv("AGENT_URL", url)
        monkeypatch.setenv("AGENT_HEADERS", '{"Authorization": "Bearer tenant-secret-7"}')
        agent = make_agent(RunSettings(agent_url=url), TENANT)
        (row,) = asyncio.run(collect_replies(agent, [turn()], concurrency=1, deadline_ms=10_000))
        assert server.headers[-1]["Authorization"] == "Bearer tenant-secret-7" and row.error is None
        assert "tenant-secret-7" not in row.model_dump_json() and "tenant-secret-7" not in agent.name
        # a URL the environment did not configure (a run's tags, a tenants file) is sent none
        other = make_agent(RunSettings(agent_url=server.base_url + "/other"), TENANT)
        asyncio.run(collect_replies(other, [turn()], concurrency=1, deadline_ms=10_000))
        assert "Authorization" not in server.headers[-1]
    assert agent_headers(url, {"AGENT_HEADERS": '{"X": "1"}'}) == {}  # no AGENT_URL beside it


@pytest.mark.parametrize("text", ['["Bearer x"]', '{"Authorization": 7}', "Bearer tenant-secret-7"])
def test_agent_headers_that_are_no_object_of_text_are_an_input_error_that_never_shows_them(text: str) -> None:
    from kindgi_eval.agents.factory import agent_headers

    with pytest.raises(InputError) as refused:
        agent_headers(
            "https://agent.example/reply", {"AGENT_URL": "https://agent.example/reply", "AGENT_HEADERS": text}
        )
    assert str(refused.value).startswith("AGENT_HEADERS: is not a JSON object") and "tenant-secret-7" not in str(
        refused.value
    )

"""Scenarios through the command line, against an agent served over HTTP and a judge behind a scripted
OpenAI-compatible server, both started here: an agent that concedes on its third turn passes every case written for
it and fails the scenario on that turn; the rubric is judged on the right turns and a review entry over the whole
transcript; a replay asks neither the agent nor anyone else again."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from kindgi_eval_tests.conftest import run_cli
from kindgi_eval_tests.fake_provider import Answer, criterion_of, fenced

STOCK = "The Foundation Course is $450 paid upfront, the same for every student. Would you like to pay upfront or in instalments?"
CONCESSION = "Alright, just for you I can do a discount: $400. Shall I send you the signup link?"
OBJECTIONS = ["that's more than I wanted to spend", "it's still too expensive", "come on, surely you can do better?"]
CASES = [  # what a tenant writes for this agent: every history in the tenant's own words, never the agent's
    {
        "id": "first-objection",
        "contact": {"funnel_stage": "offer", "course": "foundation"},
        "text": OBJECTIONS[0],
        "expect": {"escalate": False},
        "must_contain": ["$450"],
        "must_not_contain": ["discount"],
        "must_end_with_question": True,
    },
    {
        "id": "third-push",
        "contact": {"funnel_stage": "offer", "course": "foundation"},
        "history": [
            {"role": "user", "text": OBJECTIONS[0]},
            {"role": "agent", "text": "It is $450 for everyone."},
            {"role": "user", "text": OBJECTIONS[1]},
            {"role": "agent", "text": "The price is $450, the same for all."},
        ],
        "text": OBJECTIONS[2],
        "expect": {"escalate": False},
        "must_not_contain": ["discount"],
        "must_end_with_question": True,
    },
]
SCENARIO = {
    "id": "objection-pushed-three-times",
    "contact": {"funnel_stage": "offer", "course": "foundation"},
    "moves": OBJECTIONS,
    "expect": {"escalate": False},
    "must_contain": ["$450"],
    "must_not_contain": ["discount"],
    "must_end_with_question": True,
}


class ConcedingAgent:
    """An agent over HTTP (the AGENT_URL protocol) that holds the price twice in its own words and concedes when its
    own two earlier replies are in the history: its third turn of a conversation it steers."""

    def __init__(self, concedes: bool = True) -> None:
        self.asked: list[dict[str, Any]] = []
        self.concedes = concedes
        agent = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - the http.server API
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                agent.asked.append(body)
                own = sum(t["role"] == "agent" and t["text"] == STOCK for t in body["history"])
                reply = {
                    "messages": [CONCESSION if own >= 2 and agent.concedes else STOCK],
                    "escalate": False,
                    "reason": None,
                }
                payload = json.dumps(reply).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/agent"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def agent():
    served = ConcedingAgent()
    yield served
    served.close()


def suite(
    folder: Path, *, cases: list[dict] = CASES, scenarios: list[dict] = (SCENARIO,), calibration: list[dict] = ()
) -> Path:
    folder.mkdir()
    (folder / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    (folder / "scenarios.jsonl").write_text("".join(json.dumps(s) + "\n" for s in scenarios))
    if calibration:
        (folder / "calibration.jsonl").write_text("".join(json.dumps(c) + "\n" for c in calibration))
    return folder


def sql(query: str) -> list[dict]:
    done = run_cli("sql", query, "--format", "json")
    assert done.code == 0, done.err
    return json.loads(done.out)


def test_an_agent_that_concedes_on_its_third_turn_passes_its_cases_and_fails_the_scenario_on_that_turn(
    home, tmp_path, agent
) -> None:
    only_cases = suite(tmp_path / "cases", scenarios=[])
    (only_cases / "scenarios.jsonl").unlink()
    passed = run_cli(
        "run", "--agent-url", agent.url, "--eval-dir", str(only_cases), "--json", str(tmp_path / "cases.json")
    )
    assert passed.code == 0, passed.out + passed.err
    assert json.loads((tmp_path / "cases.json").read_text())["counts"]["passed"] == 2

    folder = suite(tmp_path / "both")
    done = run_cli("run", "--agent-url", agent.url, "--eval-dir", str(folder), "--json", str(tmp_path / "both.json"))
    assert done.code == 1, done.err
    summary = json.loads((tmp_path / "both.json").read_text())
    (scenario,) = [c for c in summary["cases"] if c["id"] == SCENARIO["id"]]
    assert scenario["status"] == "failed"
    assert scenario["failures"] == ['turn 3: reply contains "discount", which is forbidden']
    assert [t["contact_text"] for t in scenario["turns"]] == OBJECTIONS
    assert [t["messages"] for t in scenario["turns"]] == [[STOCK], [STOCK], [CONCESSION]]
    assert {t["contact_by"] for t in scenario["turns"]} == {"script"}
    assert scenario["messages"] == [CONCESSION]  # its last agent turn's
    assert [c["status"] for c in summary["cases"] if c["id"] != SCENARIO["id"]] == ["passed", "passed"]
    # the agent was asked with the growing history: its own replies between the moves
    played = [a for a in agent.asked if a["case_id"] == SCENARIO["id"]]
    assert [len(a["history"]) for a in played] == [0, 2, 4]
    assert played[2]["history"] == [
        {"role": "user", "text": OBJECTIONS[0]},
        {"role": "agent", "text": STOCK},
        {"role": "user", "text": OBJECTIONS[1]},
        {"role": "agent", "text": STOCK},
    ]
    assert (
        "  turn 3 contact: come on, surely you can do better?\n    1| " + CONCESSION + "\n"
        '    FAILED: turn 3: reply contains "discount", which is forbidden\n' in done.out
    )
    turns = sql("SELECT case_id, turn, contact_by, contact_text, messages, escalate FROM turns ORDER BY turn")
    assert [(t["turn"], t["messages"]) for t in turns] == [(1, [STOCK]), (2, [STOCK]), (3, [CONCESSION])]
    (status,) = sql(f"SELECT status, failures FROM statuses WHERE case_id = '{SCENARIO['id']}'")
    assert status == {"status": "failed", "failures": ['turn 3: reply contains "discount", which is forbidden']}
    run_id = next(line.split()[1] for line in done.err.splitlines() if line.startswith("run "))
    page = tmp_path / "report.html"
    assert run_cli("report", run_id, "--html", str(page)).code == 0
    html = page.read_text()
    at = html.index('data-turn="3"')  # the transcript, the turn's failure beneath its reply
    assert (
        html.index("come on, surely you can do better?", at)
        < html.index("discount", at)
        < html.index("turn 3: reply contains", at)
    )


def calibration_items() -> list[dict]:
    """A pass and a fail item for each group, each labelled as the scripted judge grades it."""
    items = []
    for group in (
        "implicit_concession",
        "semantic_repetition",
        "answers_the_question",
        "holds the price on every push",
    ):
        items += [
            {"id": f"{group[:20]}-pass", "text": "how much?", "reply": ["Fine."], "criterion": group, "label": "pass"},
            {"id": f"{group[:20]}-fail", "text": "how much?", "reply": ["BAD."], "criterion": group, "label": "fail"},
        ]
    return items


def judge(request: dict[str, Any]) -> Answer:
    """Fails a reply holding BAD or the word discount, quoting it; passes the rest."""
    reply = fenced(request, "reply")
    for words in ("BAD", "discount"):
        if words in reply:
            return Answer(json.dumps({"verdict": "fail", "evidence": words, "reason": f"says {words}"}))
    return Answer(json.dumps({"verdict": "pass", "evidence": "", "reason": "fine"}))


def test_the_rubric_is_judged_per_turn_a_review_over_the_transcript_and_a_replay_asks_no_agent(
    home, tmp_path, agent, provider_env
) -> None:
    judged = {**SCENARIO, "must_not_contain": [], "review": "holds the price on every push"}  # reaches the judge
    folder = suite(tmp_path / "judged", cases=CASES[:1], scenarios=[judged], calibration=calibration_items())
    server = provider_env(judge)
    done = run_cli(
        "run",
        "--agent-url",
        agent.url,
        "--eval-dir",
        str(folder),
        "--judge-model",
        "openai:fake-judge",
        "--json",
        str(tmp_path / "judged.json"),
    )
    assert done.code == 1, done.err
    (scenario,) = [c for c in json.loads((tmp_path / "judged.json").read_text())["cases"] if c["id"] == SCENARIO["id"]]
    assert scenario["status"] == "judged-fail"
    graded = [(c["criterion"], c["turn"], c["verdict"]) for c in scenario["criteria"]]
    assert graded == [
        ("holds the price on every push", 3, "fail"),  # once over the transcript; its evidence is turn 3's words
        ("implicit_concession", 1, "pass"),
        ("answers_the_question", 1, "pass"),  # no earlier agent turn: no repetition
        ("implicit_concession", 2, "pass"),
        ("semantic_repetition", 2, "pass"),
        ("answers_the_question", 2, "pass"),
        ("implicit_concession", 3, "fail"),
        ("semantic_repetition", 3, "fail"),
        ("answers_the_question", 3, "fail"),
    ]
    assert {c["evidence"] for c in scenario["criteria"] if c["verdict"] == "fail"} == {"discount"}
    # each turn's request carried that turn's reply alone, after the conversation before it; the review, every turn
    asked = [
        (criterion_of(r).split(":")[0], fenced(r, "reply"))
        for r in server.requests
        if fenced(r, "reply") not in ("Fine.", "BAD.")
    ]
    transcript = f"{STOCK}\n\n{STOCK}\n\n{CONCESSION}"
    assert sorted(set(asked)) == sorted(
        {
            ("implicit_concession", STOCK),
            ("answers_the_question", STOCK),
            ("semantic_repetition", STOCK),
            ("implicit_concession", CONCESSION),
            ("answers_the_question", CONCESSION),
            ("semantic_repetition", CONCESSION),
            ("The reply passes when it meets this criterion, and fails when it does not", transcript),
        }
    )
    samples = sql(
        "SELECT turn, criterion, count(*) AS n FROM judge_samples WHERE subject_id = 'objection-pushed-three-times' "
        "GROUP BY ALL ORDER BY turn NULLS FIRST, criterion"
    )
    assert [(s["turn"], s["criterion"], s["n"]) for s in samples] == [
        (None, "holds the price on every push", 3),
        (1, "answers_the_question", 3),
        (1, "implicit_concession", 3),
        (2, "answers_the_question", 3),
        (2, "implicit_concession", 3),
        (2, "semantic_repetition", 3),
        (3, "answers_the_question", 3),
        (3, "implicit_concession", 3),
        (3, "semantic_repetition", 3),
    ]
    assert '  JUDGED-FAIL holds the price on every push: says discount\n    evidence: "discount" (turn 3)\n' in done.out

    run_id = next(line.split()[1] for line in done.err.splitlines() if line.startswith("run "))
    asked_before, judged_before = len(agent.asked), len(server.requests)
    replayed = run_cli(
        "replay", "--from", run_id, "--judge-model", "openai:fake-judge", "--json", str(tmp_path / "replay.json")
    )
    assert replayed.code == 1, replayed.err
    assert len(agent.asked) == asked_before  # no agent call: the stored transcript is judged again
    assert len(server.requests) > judged_before
    (again,) = [c for c in json.loads((tmp_path / "replay.json").read_text())["cases"] if c["id"] == SCENARIO["id"]]
    assert again["turns"] == scenario["turns"] and again["criteria"] == scenario["criteria"]


def test_diff_says_where_two_runs_transcripts_part(home, tmp_path, agent) -> None:
    folder = suite(tmp_path / "suite", cases=CASES[:1])
    holding = ConcedingAgent(concedes=False)
    try:
        runs = []
        for served in (holding, agent):
            done = run_cli("run", "--agent-url", served.url, "--eval-dir", str(folder))
            runs.append(next(line.split()[1] for line in done.err.splitlines() if line.startswith("run ")))
    finally:
        holding.close()
    shown = run_cli("diff", *runs)
    assert shown.code == 0, shown.err
    assert (
        "Transcripts that part: 1\n  objection-pushed-three-times: from turn 3\n"
        f"    A: contact: {OBJECTIONS[2]} | agent: {STOCK}\n    B: contact: {OBJECTIONS[2]} | agent: {CONCESSION}\n"
    ) in shown.out
    assert "Replies: different" in shown.out
    compared = json.loads(run_cli("diff", *runs, "--json").out)
    assert [(t["case_id"], t["turn"]) for t in compared["transcripts"]] == [("objection-pushed-three-times", 3)]
    same = json.loads(run_cli("diff", runs[1], runs[1], "--json").out)
    assert same["transcripts"] == []


PERSONA = {
    "id": "parent-on-a-budget",
    "contact": {"funnel_stage": "discovery", "course": "data"},
    "persona": "A parent of a fourteen-year-old, careful with money",
    "goal": "a weekend course for their son, cheaply",
    "max_turns": 4,
    "expect": {"escalate": False},
    "must_not_contain": ["discount"],
}
CONTACT_LINES = ["Hi, do you have weekend courses for teenagers?", "How much is it?", "Hmm, can you do it cheaper?"]


def contact(request: dict[str, Any]) -> Answer:
    """A contact model: says its lines in turn, each after the agent's reply, then is done."""
    said = sum(line.startswith("contact: ") for line in fenced(request, "history").split("\n"))
    line = CONTACT_LINES[said] if said < len(CONTACT_LINES) else ""
    return Answer(json.dumps({"message": line, "done": not line}))


def test_a_persona_scenario_without_a_contact_model_is_refused_naming_the_setting(home, tmp_path) -> None:
    folder = suite(tmp_path / "persona", cases=CASES[:1], scenarios=[PERSONA])
    done = run_cli("run", "--mock", "--eval-dir", str(folder))
    assert done.code == 2 and done.out == ""
    assert done.err.startswith("error: EVAL_CONTACT_MODEL: is not set, and a scenario has a persona and a goal")
    assert not home.root.exists() or not any(home.store.rglob("*.parquet"))


def test_a_persona_run_against_an_unchanged_agent_reuses_every_contact_message(home, tmp_path, provider_env) -> None:
    folder = suite(tmp_path / "persona", cases=CASES[:1], scenarios=[PERSONA])
    server = provider_env(contact)
    args = ("run", "--mock", "--eval-dir", str(folder), "--contact-model", "openai:gpt-4o-mini")
    first = run_cli(*args, "--json", str(tmp_path / "first.json"))
    assert first.code == 0, first.err
    asked = len(server.requests)
    assert asked == 4  # three messages, then done
    request = server.requests[0]["messages"][-1]["content"]  # this scenario's own persona, goal and contact reached it
    assert (
        fenced(server.requests[0], "persona") == PERSONA["persona"]
        and fenced(server.requests[0], "goal") == PERSONA["goal"]
    )
    assert "course of interest: data" in request and "(no messages yet)" in request
    assert all(
        fenced(r, "history").count("contact: ") == n for n, r in enumerate(server.requests)
    )  # one message a turn
    (scenario,) = [c for c in json.loads((tmp_path / "first.json").read_text())["cases"] if c["id"] == PERSONA["id"]]
    assert [t["contact_text"] for t in scenario["turns"]] == CONTACT_LINES
    assert {t["contact_by"] for t in scenario["turns"]} == {"openai:gpt-4o-mini"}
    summary = json.loads((tmp_path / "first.json").read_text())
    assert summary["cost"]["contact_usd"] > 0 and summary["cost"]["agent_usd"] == 0  # paid apart from the agent

    second = run_cli(*args, "--json", str(tmp_path / "second.json"))
    assert second.code == 0, second.err
    assert len(server.requests) == asked  # no contact-model call: every message was stored
    again = json.loads((tmp_path / "second.json").read_text())
    assert [c for c in again["cases"] if c["id"] == PERSONA["id"]][0]["turns"] == scenario["turns"]
    assert again["cost"]["contact_usd"] == 0
    runs = sql("SELECT run_id, contact_usd FROM runs ORDER BY started_at, finished_at")
    transcripts = [
        sql(f"SELECT turn, contact_by, contact_text, messages FROM turns WHERE run_id = '{r['run_id']}' ORDER BY turn")
        for r in runs
    ]
    assert transcripts[0] == transcripts[1] and len(transcripts[0]) == 3

    fresh = run_cli(*args, "--fresh-contact")
    assert fresh.code == 0, fresh.err
    assert len(server.requests) == 2 * asked  # asked afresh

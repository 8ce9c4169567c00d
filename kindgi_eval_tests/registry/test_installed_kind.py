"""A kind another package installs is a kind the registry takes: published over HTTP to `kindgi-eval serve` (a real
process that finds the kind as pip would have installed it), checked by the kind's own check, pulled, and run by
`kindgi-eval run --suite`; a kind nothing installs is still refused naming `kind`."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import httpx
import pytest

from kindgi_eval.kinds import GROUP
from kindgi_eval_tests.conftest import CLI, REPO, run_cli

QUIZ = """
from kindgi_eval.kinds import Reporting, SuiteKind, count
from kindgi_eval.registry import Consumer, FolderContent, jsonl
from kindgi_eval.store import FigureColumn


def _check(spec, catalogue):
    questions = spec.get("questions")
    if not isinstance(questions, list) or not questions:
        return ["spec.questions: required, a list of questions. Give at least one."]
    return [f"spec.questions[{i}]: not a text. Write the question as a string." for i, q in enumerate(questions)
            if not isinstance(q, str)]


def _folder(spec, catalogue):
    cases = [{"id": f"q{i + 1}", "text": q, "expect": {"escalate": False}} for i, q in enumerate(spec["questions"])]
    return FolderContent({"cases.jsonl": jsonl(cases)}, {})


def _metrics(rows):
    return [count("questions_answered", sum(1 for r in rows.replies if r.messages))]


KIND = SuiteKind(
    name="quiz",
    consumer=Consumer("quiz", _check, "kindgi-eval run", _folder),
    report=Reporting(
        enters_funnel=False,
        metrics=_metrics,
        figures=(FigureColumn("questions_answered", "BIGINT", "questions_answered"),),
        lines=lambda result: [f"Quiz: {result.figures['questions_answered']} questions answered"],
    ),
)
"""

QUESTIONS = ["how much is the foundation course?", "when does it run?"]


def install_quiz(site: Path) -> None:
    """A package `quiz_kind` on `site`: its module and the dist-info naming its entry point, as pip would write them."""
    site.mkdir()
    (site / "quiz_kind.py").write_text(QUIZ)
    info = site / "quiz_kind-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: quiz-kind\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[{GROUP}]\nquiz = quiz_kind:KIND\n")


class Served(NamedTuple):
    url: str
    secret: str
    env: dict[str, str]
    """What a command of the tenant needs: the package on the path, and the registry with its token."""


@pytest.fixture
def served(home, tmp_path: Path) -> Iterator[Served]:
    """`kindgi-eval serve` on a free port of 127.0.0.1, with the quiz kind installed, and a token of the demo tenant."""
    install_quiz(tmp_path / "site")
    env = {"PYTHONPATH": str(tmp_path / "site")}
    issued = run_cli("tokens", "issue", "--tenant", "demo-academy", env=env)
    assert issued.code == 0, issued.err
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    server = subprocess.Popen(
        [str(CLI), "serve", "--port", str(port)],
        cwd=REPO,
        env={**os.environ, **env},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                httpx.get(f"{url}/healthz", timeout=1)
                break
            except httpx.TransportError:
                assert server.poll() is None and time.monotonic() < deadline, server.stderr.read()
                time.sleep(0.1)
        secret = issued.out.strip()
        yield Served(url, secret, {**env, "KINDGI_REGISTRY_URL": url, "KINDGI_REGISTRY_TOKEN": secret})
    finally:
        server.send_signal(signal.SIGINT)
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
    assert "kinds: accuracy, benchmark, conversation, custom, human-review, pairwise, quiz, regression" in (
        server.stderr.read()
    )


def document(kind: str, spec: dict, version: str = "1.0.0") -> dict:
    return {"id": "demo-academy.quiz", "tenantId": "demo-academy", "version": version, "kind": kind, "spec": spec}


def test_a_kind_another_package_installs_is_published_pulled_and_run(served, tmp_path: Path) -> None:
    described = httpx.get(f"{served.url}/openapi.json").json()["components"]["schemas"]["EvalSuite"]
    assert "quiz" in described["properties"]["kind"]["enum"]  # the schema the server describes names it

    source = tmp_path / "quiz.json"
    source.write_text(json.dumps(document("quiz", {"questions": QUESTIONS})))
    published = run_cli("suites", "publish", str(source), env=served.env)
    assert published.code == 0, published.err
    assert published.out.startswith("published: demo-academy.quiz 1.0.0 (quiz) sha256 ")

    pulled = run_cli("suites", "pull", "demo-academy.quiz", str(tmp_path / "pulled"), env=served.env)
    assert pulled.code == 0, pulled.err
    assert json.loads((tmp_path / "pulled" / "suite.json").read_text())["spec"] == {"questions": QUESTIONS}

    out = tmp_path / "summary.json"
    done = run_cli("run", "--mock", "--suite", "demo-academy.quiz@1.0.0", "--json", str(out), env=served.env)
    assert done.code == 0, done.err
    assert "Quiz: 2 questions answered" in done.out  # its own figure, from the replies to the pulled version's cases
    summary = json.loads(out.read_text())
    assert [c["id"] for c in summary["cases"]] == ["q1", "q2"]
    query = "SELECT suite_kind, suite_id, questions_answered FROM quiz_runs"
    view = run_cli("sql", query, "--format", "json", env=served.env)
    assert json.loads(view.out) == [{"suite_kind": "quiz", "suite_id": "demo-academy.quiz", "questions_answered": 2}]


def test_the_installed_kind_s_own_check_refuses_a_bad_spec_and_an_uninstalled_kind_is_refused_naming_kind(
    served,
) -> None:
    http = httpx.Client(base_url=served.url, headers={"Authorization": f"Bearer {served.secret}"}, timeout=30)
    with http:
        bad = http.post("/v1/eval-suites", json=document("quiz", {"questions": ["fine", 7]}))
        assert bad.status_code == 422, bad.text
        assert "spec.questions[1]: not a text. Write the question as a string." in bad.json()["error"]["message"]
        unknown = http.post("/v1/eval-suites", json=document("poll", {"questions": QUESTIONS}))
        assert unknown.status_code == 422, unknown.text
        message = unknown.json()["error"]["message"]
        assert message.startswith("kind: 'poll' is not a kind installed here") and ", quiz, " in message
        assert http.get("/v1/eval-suites").json()["data"] == []  # nothing was stored

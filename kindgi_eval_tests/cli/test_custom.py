"""A custom suite end to end: published over real HTTP, run by `kindgi-eval run --suite` as a real process with its
handler in the sandbox, and queried with `kindgi-eval sql`. One handler misbehaves a different way on each case (a
timeout, memory, a crash, garbage, a socket, another tenant's suite, the store): each is refused and recorded as that
case's error, never a pass, and the run goes on to the next."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from kindgi_eval_tests.cli.conftest import publish, sql
from kindgi_eval_tests.conftest import run_cli

pytestmark = pytest.mark.skipif(
    shutil.which("bwrap") is None, reason="bubblewrap is not installed (.ci/run installs it)"
)

SECRET = "globex-secret-price-9731"
"""What another tenant's suite says: it must never reach this tenant's handler, nor the store through it."""

HANDLER = """
import os, socket, sys, time

def grade(case, reply):
    what = case["id"]
    text = " ".join(reply["messages"])
    if what == "passes":
        return {"pass": True, "score": 0.75, "reason": "the reply has " + str(len(text.split())) + " words"}
    if what == "fails":
        return {"pass": False, "reason": "not what the tenant wants"}
    if what == "times-out":
        time.sleep(30)
    if what == "eats-memory":
        hoard = bytearray(3 << 30)
    if what == "crashes":
        raise RuntimeError("the handler broke")
    if what == "prints-garbage":
        os.write(1, b"certainly! here is my verdict")
        os._exit(0)
    if what == "opens-a-socket":
        port = int(case["text"].rsplit(" ", 1)[1])
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
        return {"pass": True, "reason": "reached the registry"}
    if what in ("reads-another-tenant", "reads-the-store"):
        path = case["text"].split(" ", 1)[1]
        with open(path) as f:
            return {"pass": True, "reason": f.read()[:200]}
    return {"pass": False, "reason": "no such case"}
"""


def case(case_id: str, text: str = "how much is the foundation course?") -> dict:
    return {"id": case_id, "text": text, "expect": {"escalate": False}}


def test_a_custom_suite_runs_its_handler_sandboxed_and_records_each_failure(registry, home, tmp_path) -> None:
    # another tenant's published suite, written out where the runtime folder keeps registered suites
    publish(registry.other, "globex.prices", "conversation", {"cases": [case("p", SECRET)]}, tenant="globex")
    theirs = home.root / "registry-suites" / "globex" / "globex.prices" / "1.0.0" / "prices"
    theirs.mkdir(parents=True)
    (theirs / "cases.jsonl").write_text(json.dumps(case("p", SECRET)) + "\n")
    assert run_cli("run", "--mock").code in (0, 1)  # the store holds a run before the handler looks for it
    stored = next(p for p in home.store.rglob("*.parquet"))
    port = registry.http.base_url.port
    spec = {
        "handler": {"modulePath": "graders/house.py", "entrypointPath": "grade", "source": HANDLER},
        "cases": [
            case("passes"),
            case("fails"),
            case("times-out"),
            case("eats-memory"),
            case("crashes"),
            case("prints-garbage"),
            case("opens-a-socket", f"port {port}"),
            case("reads-another-tenant", f"file {theirs / 'cases.jsonl'}"),
            case("reads-the-store", f"file {stored}"),
        ],
    }
    publish(registry.http, "demo-academy.house", "custom", spec)
    out = tmp_path / "custom.json"
    done = run_cli("run", "--mock", "--suite", "demo-academy.house", "--handler-timeout-s", "1", "--json", str(out))
    said = done.out + done.err
    assert done.code == 1, said  # failed cases, and the run finished

    rows = {
        r["case_id"]: r for r in sql("SELECT case_id, verdict, score, reason, error, duration_ms, status FROM custom")
    }
    assert list(rows) == [c["id"] for c in spec["cases"]]  # every case recorded, in suite order
    assert rows["passes"] | {"duration_ms": None} == {
        "case_id": "passes",
        "verdict": "pass",
        "score": 0.75,
        "reason": rows["passes"]["reason"],
        "error": None,
        "duration_ms": None,
        "status": "passed",
    }
    assert rows["passes"]["reason"].startswith("the reply has ") and rows["passes"]["duration_ms"] > 0
    assert rows["fails"] | {"duration_ms": None} == {
        "case_id": "fails",
        "verdict": "fail",
        "score": None,
        "reason": "not what the tenant wants",
        "error": None,
        "duration_ms": None,
        "status": "failed",
    }
    errors = {case_id: r["error"] for case_id, r in rows.items() if r["verdict"] == "error"}
    assert set(errors) == set(rows) - {"passes", "fails"}  # every misbehaviour is an error, never a pass
    assert all(rows[c]["status"] == "failed" and rows[c]["reason"] is None for c in errors)
    assert errors["times-out"] == "the handler ran past its time limit of 1 s and was killed"
    assert 1000 <= rows["times-out"]["duration_ms"] < 5000
    assert errors["eats-memory"] == "the handler exhausted its memory limit of 2048 MiB (MemoryError)"
    assert errors["crashes"] == "the handler crashed: RuntimeError: the handler broke"
    assert errors["prints-garbage"].startswith("the handler answered with something that is not JSON")
    assert "certainly! here is my verdict" in errors["prints-garbage"]
    assert errors["opens-a-socket"].startswith("the handler crashed: ConnectionRefusedError")  # its own empty network
    assert (
        errors["reads-another-tenant"]
        == f"the handler crashed: FileNotFoundError: [Errno 2] No such file or directory: '{theirs / 'cases.jsonl'}'"
    )
    assert (
        errors["reads-the-store"]
        == f"the handler crashed: FileNotFoundError: [Errno 2] No such file or directory: '{stored}'"
    )

    # the verdict is the case's check: an outcome row each, and the run's line and JSON count them
    checks = sql(
        "SELECT case_id, assertion, held FROM outcomes WHERE assertion IN ('custom_handler', 'handler_error') ORDER BY case_id"
    )
    assert {(r["case_id"], r["assertion"], r["held"]) for r in checks} == (
        {("passes", "custom_handler", True), ("fails", "custom_handler", False)}
        | {(c, "handler_error", False) for c in errors}
    )
    assert "Custom handler graders/house.py:grade (source sha256 " in said
    assert ": 1 passed, 1 failed, 7 errors (no valid verdict, never a pass), 0 skipped (no reply)" in said
    summary = json.loads(out.read_text())
    assert summary["custom"] | {"hash": None} == {
        "handler": "graders/house.py:grade",
        "hash": None,
        "passed": 1,
        "failed": 1,
        "errors": 7,
        "skipped": 0,
    }
    assert len(summary["custom"]["hash"]) == 64
    (run,) = sql(
        "SELECT suite_kind, handler_name, handler_errors FROM custom_runs WHERE suite_id = 'demo-academy.house'"
    )
    assert run == {"suite_kind": "custom", "handler_name": "graders/house.py:grade", "handler_errors": 7}
    assert SECRET not in json.dumps(sql("SELECT * FROM custom")) + json.dumps(sql("SELECT * FROM outcomes"))


def test_a_handler_whose_source_was_changed_after_publishing_never_runs(registry, home, tmp_path) -> None:
    source = "def grade(case, reply):\n    return {'pass': False, 'reason': 'as published'}\n"
    publish(
        registry.http,
        "demo-academy.tampered",
        "custom",
        {"handler": {"modulePath": "h.py", "entrypointPath": "grade", "source": source}, "cases": [case("one")]},
    )
    assert run_cli("run", "--mock", "--suite", "demo-academy.tampered").code == 1  # written out, and run as published
    (written,) = Path(home.root, "registry-suites").rglob("handler.json")
    handler = json.loads(written.read_text())
    tampered = json.dumps({**handler, "source": source.replace("False", "True")})
    written.write_text(tampered)
    # run from the registry: the copy is checked against the version and written again, and the published source runs
    done = run_cli("run", "--mock", "--suite", "demo-academy.tampered")
    assert done.code == 1 and "FAILED: the custom handler failed the reply: as published" in done.out, (
        done.out + done.err
    )
    assert f"warning: {written.parent} is not what suite demo-academy.tampered 1.0.0 holds" in done.err
    assert json.loads(written.read_text()) == handler
    # run as a folder: the source is checked against the hash its registry.json records, and refused
    written.write_text(tampered)
    done = run_cli("run", "--mock", "--eval-dir", str(written.parent))
    assert done.code == 2, done.out + done.err
    assert f"error: {written}: field source: is not the handler's published source (its SHA-256 differs" in done.err

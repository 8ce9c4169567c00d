"""The Dagster UI as a user sees it: `dagster dev` on 127.0.0.1, a run launched through it, headless Chromium."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from importlib.resources import files
from pathlib import Path
from typing import NamedTuple

import pytest

from kindgi_eval.defs.runs import open_instance
from kindgi_eval.inputs.tenants_file import TENANTS_ENV, load_tenants
from kindgi_eval_tests.conftest import REPO, run_cli
from kindgi_eval_tests.defs.test_judged_runs import Judge, calibration_lines, case, write_suite
from kindgi_eval_tests.fake_provider import FakeProvider, criterion_of, fenced
from kindgi_eval_tests.inputs.test_tenants_file import entry, tenant_tree, write_tenants

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
DAGSTER = Path(sys.executable).parent / "dagster"
KEY = "alpha.night"
SPLIT_VOTES = r"fail, fail, pass|fail, pass, fail|pass, fail, fail"
STARTUP_S = 120
RUN_S = 180


def _browser_or_skip() -> None:
    """Skip without Chromium or Playwright, unless CI (KINDGI_REQUIRE_BROWSER=1) promised both."""
    missing = []
    if not CHROMIUM.exists():
        missing.append(f"{CHROMIUM} (apt-get install chromium)")
    try:
        import playwright  # noqa: F401
    except ImportError:
        missing.append("playwright (pip install -e '.[test]')")
    if missing:
        message = f"no headless browser here: missing {', '.join(missing)}"
        if os.environ.get("KINDGI_REQUIRE_BROWSER") == "1":
            pytest.fail(message)
        pytest.skip(message)


class Dev(NamedTuple):
    """A running `dagster dev`."""

    url: str
    process: subprocess.Popen
    log: Path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str, timeout: float = 5) -> bytes:
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return response.read()


def graphql(dev: Dev, query: str, variables: dict | None = None) -> dict:
    """One GraphQL request to the webserver; its `data`."""
    request = urllib.request.Request(
        f"{dev.url}/graphql",
        json.dumps({"query": query, "variables": variables or {}}).encode(),
        {"Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            body = json.load(response)
    except urllib.error.HTTPError as e:
        pytest.fail(f"GraphQL answered {e.code}: {e.read().decode(errors='replace')[:2000]}")
    assert "errors" not in body, body
    return body["data"]


@pytest.fixture
def dev(home, tmp_path: Path) -> Iterator[Dev]:
    """`dagster dev -w workspace.yaml` on a free 127.0.0.1 port in its own process group, stopped by that group's id."""
    home.dagster.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(str(files("kindgi_eval") / "dagster.yaml"), home.dagster / "dagster.yaml")
    port = _free_port()
    log = tmp_path / "dagster-dev.log"
    # A child inherits ignored signals; `dagster dev` copies SIGINT's disposition onto SIGTERM, so make sure neither
    # is ignored here (a CI runner may start us with SIGINT ignored) and TERM reaches every process of the group.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler), signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        with log.open("wb") as out:
            process = subprocess.Popen(
                [str(DAGSTER), "dev", "-w", "workspace.yaml", "-h", "127.0.0.1", "-p", str(port)],
                cwd=REPO,
                env=os.environ.copy(),
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,  # its own process group, whose id is its PID
            )
    finally:
        signal.signal(signal.SIGINT, previous[0])
        signal.signal(signal.SIGTERM, previous[1])
    running = Dev(f"http://127.0.0.1:{port}", process, log)
    try:
        deadline = time.monotonic() + STARTUP_S
        while True:
            if process.poll() is not None:
                pytest.fail(f"dagster dev exited with {process.returncode}:\n{log.read_text()[-3000:]}")
            try:
                _get(f"{running.url}/server_info")
                break
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                if time.monotonic() > deadline:
                    pytest.fail(f"dagster dev did not answer in {STARTUP_S} s:\n{log.read_text()[-3000:]}")
                time.sleep(0.5)
        yield running
    finally:
        _stop(process)


def _stop(process: subprocess.Popen) -> None:
    """TERM to the process group `dagster dev` leads, then KILL whatever of that group is left."""
    group = process.pid
    try:
        os.killpg(group, signal.SIGTERM)
        process.wait(timeout=20)
    except ProcessLookupError:
        return
    except subprocess.TimeoutExpired:
        pass
    try:
        time.sleep(0.5)
        os.killpg(group, signal.SIGKILL)  # code servers and run workers that outlived it
    except ProcessLookupError:
        pass
    process.wait(timeout=10)


LAUNCH = """
mutation Launch($params: ExecutionParams!) {
  launchRun(executionParams: $params) {
    __typename
    ... on LaunchRunSuccess { run { runId } }
    ... on PythonError { message }
    ... on RunConfigValidationInvalid { errors { message } }
    ... on InvalidSubsetError { message }
    ... on PipelineNotFoundError { message }
  }
}
"""
STATUS = "query Status($id: ID!) { runOrError(runId: $id) { ... on Run { status tags { key value } } } }"


def launch_and_wait(dev: Dev, tags: dict[str, str]) -> tuple[str, dict]:
    """Launch `evaluate_suite` for KEY as the schedule would (queued, tagged), and wait until the run ends."""
    params = {
        "selector": {"repositoryLocationName": "kindgi_eval", "repositoryName": "__repository__", "jobName": "evaluate_suite"},
        "runConfigData": {},
        "executionMetadata": {"tags": [{"key": k, "value": v} for k, v in {"dagster/partition": KEY, **tags}.items()]},
    }
    deadline = time.monotonic() + RUN_S
    while True:  # the code location may still be loading
        launched = graphql(dev, LAUNCH, {"params": params})["launchRun"]
        if launched["__typename"] == "LaunchRunSuccess":
            break
        if time.monotonic() > deadline:
            pytest.fail(f"the run could not be launched: {launched}")
        time.sleep(1)
    run_id = launched["run"]["runId"]
    while True:
        run = graphql(dev, STATUS, {"id": run_id})["runOrError"]
        if run["status"] in ("SUCCESS", "FAILURE", "CANCELED"):
            return run_id, run
        if time.monotonic() > deadline:
            pytest.fail(f"run {run_id} still {run['status']} after {RUN_S} s:\n{dev.log.read_text()[-3000:]}")
        time.sleep(0.5)


@pytest.fixture
def night(home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeProvider]:
    """Tenant alpha's suite `night`: a case the scripted judge splits 2-1 on; the judge serves on 127.0.0.1."""
    tenant_tree(tmp_path, "alpha", {"night": None})
    write_suite(tmp_path / "alpha" / "evals" / "night", [case("review-split", "criterion-split"), case("plain")], calibration_lines())
    path = write_tenants(tmp_path / "tenants.toml", entry("alpha", suites=["evals/night"], judge_model="openai:fake-judge"))
    monkeypatch.setenv(TENANTS_ENV, str(path))
    with FakeProvider(Judge()) as server:
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        open_instance(home.root).add_dynamic_partitions("suites", [KEY])
        yield server


def test_statuses_page_shows_the_split_verdict_in_chromium(night: FakeProvider, dev: Dev, tmp_path: Path) -> None:
    _browser_or_skip()
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    from playwright.sync_api import sync_playwright

    tags = load_tenants().suite(KEY).tags()
    run_id, run = launch_and_wait(dev, tags)
    assert run["status"] == "SUCCESS", dev.log.read_text()[-3000:]
    assert {t["key"]: t["value"] for t in run["tags"]}["kindgi/tenant"] == "alpha"
    # what the judge quoted for the split verdict: the start of the reply it was shown (the scripted Judge's rule)
    split = next(r for r in night.requests if criterion_of(r).endswith("criterion-split"))
    evidence = fenced(split, "reply")[:12]

    screenshot = tmp_path / "statuses.png"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_FLAGS)
        try:
            page = browser.new_page(viewport={"width": 1600, "height": 1400})
            page.goto(f"{dev.url}/assets/statuses", wait_until="domcontentloaded", timeout=60_000)
            # the votes are listed by sample number, and which sample the scripted judge answered `pass` depends on
            # the order its three concurrent requests arrived in
            row = page.locator("tr", has_text="review-split").filter(has_text=re.compile(SPLIT_VOTES))
            row.first.wait_for(timeout=60_000)
            assert evidence in row.first.inner_text()
            page.get_by_text("Latest check results").wait_for(timeout=30_000)  # the status panel has loaded too
            skip = page.get_by_role("button", name="Skip")  # Dagster's first-visit newsletter dialog covers the page
            try:
                skip.wait_for(timeout=5_000)
                skip.click()
                skip.wait_for(state="detached", timeout=5_000)
            except PlaywrightTimeout:
                pass  # this Dagster did not ask
            page.screenshot(path=str(screenshot), full_page=True)
            # the verdict report: the reply as the contact saw it, the quote, and the dissenting sample's reason
            report = page.locator("tr", has_text="verdicts_report").first.inner_text()
            reply = fenced(split, "reply")
            assert "review-split: fail, split 2-1 (judged-fail)" in report
            assert reply.split(".")[0] in report and evidence in report
            assert re.search(r"\tpass\tscripted\t", report), report  # the sample that voted the other way, and why
            # a passing run of another suite beside it: the Runs page filtered to failing lists only the night's run
            passing = run_cli("run", "--mock")
            assert passing.code == 0, passing.err
            passing_id = next(line for line in passing.err.splitlines() if line.startswith("run ")).split()[1]
            page.goto(f"{dev.url}/runs?q%5B0%5D=tag%3Akindgi%2Fresult%3Dfailing", wait_until="domcontentloaded", timeout=60_000)
            page.get_by_text(run_id[:8]).first.wait_for(timeout=60_000)
            assert page.get_by_text(passing_id[:8]).count() == 0
            page.screenshot(path=str(tmp_path / "failing-runs.png"), full_page=True)
        finally:
            browser.close()
    assert screenshot.stat().st_size > 10_000
    assert run_id

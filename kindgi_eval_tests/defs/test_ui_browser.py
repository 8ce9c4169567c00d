"""The Dagster UI as a user sees it: `kindgi-eval ui` of docs/dagster.md on 127.0.0.1, started in a folder that holds
no workspace.yaml, with no warning, a run launched through it, headless Chromium; and the HTML report of the same runs."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
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
from kindgi_eval.kinds import consumers
from kindgi_eval.registry import EvalSuite, database_url, materialize, open_store
from kindgi_eval_tests.conftest import CLI, run_cli
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
KEY = "alpha.night"
SPLIT_TEXT = "which evening suits you <best>?"
"""The contact's message of the case the judge splits on: it must show, escaped, above the reply."""
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
    """`kindgi-eval ui` (`dagster dev` on the installed code location) on a free 127.0.0.1 port, started in a folder
    without a workspace.yaml, in its own process group, stopped by that group's id."""
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
                [str(CLI), "ui", "--port", str(port)],
                cwd=tmp_path,
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
        "selector": {
            "repositoryLocationName": "kindgi_eval",
            "repositoryName": "__repository__",
            "jobName": "evaluate_suite",
        },
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
    history = [{"role": "user", "text": "hello there"}, {"role": "agent", "text": "Hi! What would you like to learn?"}]
    cases = [case("review-split", "criterion-split", text=SPLIT_TEXT, history=history), case("plain")]
    write_suite(tmp_path / "alpha" / "evals" / "night", cases, calibration_lines())
    path = write_tenants(
        tmp_path / "tenants.toml", entry("alpha", suites=["evals/night"], judge_model="openai:fake-judge")
    )
    monkeypatch.setenv(TENANTS_ENV, str(path))
    with FakeProvider(Judge()) as server:
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        open_instance(home.root).add_dynamic_partitions("suites", [KEY])
        yield server


SQUEEZED = """() => {
  const squeezed = [];
  for (const cell of document.querySelectorAll('td, th')) {
    if (cell.querySelector('td, th') || cell.offsetParent === null) continue;
    const words = cell.innerText.trim().split(/\\s+/).filter(Boolean);
    if (words.length < 3) continue;
    const range = document.createRange();
    range.selectNodeContents(cell);
    const lines = new Set([...range.getClientRects()].filter((r) => r.width > 0).map((r) => Math.round(r.top)));
    if (lines.size >= words.length) squeezed.push(cell.innerText.trim());
  }
  return squeezed;
}"""
"""The page's innermost table cells of three words or more laid out one word a line: a column squeezed unreadable."""


RUN_ROW = """(shown) => {
  const runs = (element) => new Set([...element.querySelectorAll('a[href*="/runs/"]')].map((a) => a.getAttribute('href').split('?')[0]));
  let row = [...document.querySelectorAll('a[href*="/runs/"]')].find((a) => a.textContent.trim() === shown);
  while (row.parentElement && runs(row.parentElement).size === 1) row = row.parentElement;
  return row.innerText;
}"""
"""The text of the Runs page's row of the run whose short id is given: the widest element that links to no other run."""


def accuracy_folder(home) -> Path:
    """A published accuracy suite of the demo tenant as the folder `run --eval-dir` reads; its item `discount` is wrong."""
    spec = {
        "cases": [
            {"id": "price", "input": "how much is the foundation course?", "expectedOutput": "$450"},
            {"id": "discount", "input": "can I get a discount?", "expectedOutput": "20% off"},
            {
                "id": "days",
                "input": {"text": "when does it run?", "history": [{"role": "user", "text": "hi"}]},
                "expectedOutput": "Tuesdays",
            },
        ],
        "grader": {"adapterId": "contains"},
    }
    store = open_store(database_url(home.root))
    try:
        token = store.issue_token("demo-academy", "test")
        suite = EvalSuite(
            id="demo-academy.facts",
            tenantId="demo-academy",
            version="1.0.0",
            kind="accuracy",
            description="",
            spec=spec,
        )
        store.publish("demo-academy", token.id, suite)
        return materialize(
            store.latest("demo-academy", "demo-academy.facts"), "demo-academy", home.root, consumers(), store
        )
    finally:
        store.close()


def cli_run(*args: str) -> tuple[int, str]:
    """`kindgi-eval run ARGS`: its exit status and its run id."""
    done = run_cli("run", *args)
    return done.code, next(line for line in done.err.splitlines() if line.startswith("run ")).split()[1]


def metadata_row(page, key: str):
    """The row of the asset page's metadata table that holds `key`."""
    return page.locator("tr").filter(has=page.locator("td", has_text=re.compile(f"^{re.escape(key)}$"))).first


def open_asset(page, dev: Dev, asset: str, shown: str) -> None:
    """An asset's page, once `shown` is on it, with Dagster's first-visit newsletter dialog closed if it asked."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    page.goto(f"{dev.url}/assets/{asset}", wait_until="domcontentloaded", timeout=60_000)
    page.get_by_text(shown).first.wait_for(timeout=60_000)
    skip = page.get_by_role("button", name="Skip")
    try:
        skip.wait_for(timeout=3_000)
        skip.click()
        skip.wait_for(state="detached", timeout=5_000)
    except PlaywrightTimeout:
        pass  # this Dagster did not ask, or asked already


@pytest.mark.long
def test_the_ui_and_the_report_show_the_conversation_the_result_and_the_kinds_figure(
    night: FakeProvider, dev: Dev, home, tmp_path: Path
) -> None:
    _browser_or_skip()
    from playwright.sync_api import sync_playwright

    tags = load_tenants().suite(KEY).tags()
    run_id, run = launch_and_wait(dev, tags)
    assert run["status"] == "SUCCESS", dev.log.read_text()[-3000:]
    run_tags = {t["key"]: t["value"] for t in run["tags"]}
    assert (
        run_tags["kindgi/tenant"] == "alpha" and run_tags["kindgi/result"] == "failing"
    )  # a Dagster success, a failing suite
    # what the judge quoted for the split verdict: the start of the reply it was shown (the scripted Judge's rule)
    split = next(r for r in night.requests if criterion_of(r).endswith("criterion-split"))
    reply, evidence = fenced(split, "reply"), fenced(split, "reply")[:12]

    screenshot = tmp_path / "statuses.png"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_FLAGS)
        try:
            page = browser.new_page(viewport={"width": 1600, "height": 1400})
            # the votes are listed by sample number, and which sample the scripted judge answered `pass` depends on
            # the order its three concurrent requests arrived in
            open_asset(page, dev, "statuses", "Latest check results")
            row = page.locator("tr", has_text="review-split").filter(has_text=re.compile(SPLIT_VOTES))
            row.first.wait_for(timeout=60_000)
            page.screenshot(path=str(screenshot), full_page=True)
            # the verdict report: the turns before, the contact's message, the reply with its quote, the dissenting sample
            report = page.locator("tr", has_text="verdicts_report").first.inner_text()
            assert "review-split: fail, split 2-1 (judged-fail)" in report
            message = f"contact's message: {SPLIT_TEXT}"
            assert report.index("hello there") < report.index(message) < report.index("reply 1:")
            assert reply.splitlines()[0] in report and evidence in report
            assert re.search(r"\tpass\tscripted\t", report), report  # the sample that voted the other way, and why
            assert page.evaluate(SQUEEZED) == []  # every table reads across, none a word a line
            open_asset(page, dev, "calibration", "agreement/semantic_repetition")
            metadata_row(page, "groups").wait_for(timeout=30_000)
            assert page.evaluate(SQUEEZED) == []
            page.screenshot(path=str(tmp_path / "calibration.png"), full_page=True)

            # beside it, the golden suite without a judge and an accuracy suite with a wrong item, run from the command line
            passing_code, passing_id = cli_run("--mock")  # the golden suite: its review entries are left to a person
            accuracy_code, accuracy_id = cli_run("--mock", "--eval-dir", str(accuracy_folder(home)))
            assert (passing_code, accuracy_code) == (0, 1)
            # the Runs page shows each run's result beside its Dagster status: a review-only run is not `passed`
            page.goto(f"{dev.url}/runs", wait_until="domcontentloaded", timeout=60_000)
            page.get_by_text(accuracy_id[:8]).first.wait_for(timeout=60_000)
            for shown_id, result in ((run_id, "failing"), (passing_id, "needs-review"), (accuracy_id, "failing")):
                row = page.evaluate(RUN_ROW, shown_id[:8])
                assert "Success" in row and f"kindgi/result: {result}" in row, row
            page.screenshot(path=str(tmp_path / "runs.png"), full_page=True)
            # and filters to the failing ones
            page.goto(
                f"{dev.url}/runs?q%5B0%5D=tag%3Akindgi%2Fresult%3Dfailing",
                wait_until="domcontentloaded",
                timeout=60_000,
            )
            page.get_by_text(run_id[:8]).first.wait_for(timeout=60_000)
            assert page.get_by_text(accuracy_id[:8]).count() == 1 and page.get_by_text(passing_id[:8]).count() == 0
            # the accuracy run's summary: its kind's figure, and the history table
            open_asset(page, dev, "run_summary", "Accuracy: 0.667, 2 of 3 graded items correct")
            metadata_row(page, "nights").wait_for(timeout=30_000)
            assert page.evaluate(SQUEEZED) == []
            page.screenshot(path=str(tmp_path / "run_summary.png"), full_page=True)

            # the HTML reports of the same runs: the contact's side, the result and the kind's figure
            night_page, accuracy_page = tmp_path / "night.html", tmp_path / "accuracy.html"
            assert run_cli("report", run_id, "--html", str(night_page)).code == 0
            assert run_cli("report", accuracy_id, "--html", str(accuracy_page)).code == 0
            page.goto(night_page.as_uri())
            assert "failing" in page.locator("#result").inner_text()
            case = page.locator("#cases .case", has_text="review-split").inner_text()
            assert case.index("hello there") < case.index(message) < case.index(reply.splitlines()[0])
            page.goto(accuracy_page.as_uri())
            assert "failing" in page.locator("#result").inner_text()
            figure = page.locator("#kind").inner_text()
            assert "Accuracy: 0.667, 2 of 3 graded items correct (95% Wilson interval 0.208 to 0.939)" in figure
            assert "discount\twrong\t20% off" in figure and "price" not in figure  # the wrong item, and only it
        finally:
            browser.close()
    assert screenshot.stat().st_size > 10_000
    warnings = [line for line in dev.log.read_text().splitlines() if re.search(r"warning", line, re.IGNORECASE)]
    assert warnings == []  # docs/dagster.md's command starts without one

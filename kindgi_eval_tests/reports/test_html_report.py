"""The HTML report of a run, opened in headless Chromium: it filters to failures, charts every run, and
reaches no network."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from kindgi_eval_tests.conftest import GOLDEN, run_cli
from kindgi_eval_tests.defs.test_ui_browser import CHROMIUM, CHROMIUM_FLAGS, _browser_or_skip


def run_id_of(result) -> str:
    return next(line for line in result.err.splitlines() if line.startswith("run ")).split()[1]


@pytest.fixture
def three_runs(home, tmp_path: Path) -> tuple[Path, list[str]]:
    """A copy of the golden suite run three times; before the third, one case is made to fail."""
    folder = tmp_path / "golden"
    folder.mkdir()
    (folder / "calibration.jsonl").write_bytes((GOLDEN / "calibration.jsonl").read_bytes())
    lines = (GOLDEN / "cases.jsonl").read_text().splitlines()
    (folder / "cases.jsonl").write_text("\n".join(lines) + "\n")
    runs = [run_id_of(run_cli("run", "--mock", "--eval-dir", str(folder))) for _ in range(2)]
    first = json.loads(lines[0])
    first["must_contain"] = ["words the demo agent never says <script>alert(1)</script>"]
    (folder / "cases.jsonl").write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n")
    failing = run_cli("run", "--mock", "--eval-dir", str(folder))
    assert failing.code == 1
    runs.append(run_id_of(failing))
    return folder, runs


def test_report_page_filters_to_failures_charts_each_run_and_stays_offline(home, three_runs, tmp_path: Path) -> None:
    _browser_or_skip()
    from playwright.sync_api import sync_playwright

    _, runs = three_runs
    out = tmp_path / "report.html"
    result = run_cli("report", runs[-1][:8], "--html", str(out))
    assert result.code == 0, result.err
    html = out.read_text()
    assert "<script>alert(1)</script>" not in html  # the case's untrusted text is escaped
    requests: list[str] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_FLAGS)
        try:
            page = browser.new_page(viewport={"width": 1600, "height": 1200})
            page.on("request", lambda request: requests.append(request.url))
            page.goto(out.as_uri())
            cases = page.locator("#cases .case")
            assert cases.count() == 36
            page.check("#failures-only")
            shown = page.locator("#cases .case:not(.hidden)")
            assert shown.count() == 1 and shown.first.get_attribute("data-status") == "failed"
            assert "words the demo agent never says" in shown.first.inner_text()
            page.uncheck("#failures-only")
            assert page.locator("#cases .case:not(.hidden)").count() == 36
            assert page.locator("#pass-rate circle.point").count() == 3  # one point per run of the suite
            assert page.locator("#pass-rate circle.current").get_attribute("data-run") == runs[-1]
            page.screenshot(path=str(tmp_path / "report.png"), full_page=False)
        finally:
            browser.close()
    assert [u for u in requests if not u.startswith("file://")] == []  # nothing but the file itself


def test_report_of_an_earlier_run_charts_only_the_runs_up_to_it(home, three_runs, tmp_path: Path) -> None:
    _, runs = three_runs
    out = tmp_path / "first.html"
    assert run_cli("report", runs[1], "--html", str(out)).code == 0
    assert len(re.findall(r'<circle class="point', out.read_text())) == 2


def test_report_needs_a_folder_that_exists_and_a_known_run(home, tmp_path: Path) -> None:
    missing = run_cli("report", "nosuch", "--html", str(tmp_path / "no" / "r.html"))
    assert missing.code == 2 and "--html path" in missing.err
    unknown = run_cli("report", "nosuch", "--html", str(tmp_path / "r.html"))
    assert unknown.code == 2 and "no run 'nosuch'" in unknown.err

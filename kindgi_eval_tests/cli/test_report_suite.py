"""`kindgi-eval report --suite KEY`: the suite's latest run, whatever other suite started in the same second."""

from __future__ import annotations

from pathlib import Path

from kindgi_eval_tests.cli.test_history import run_id_of
from kindgi_eval_tests.conftest import run_cli
from kindgi_eval_tests.inputs.test_tenants_file import tenant_tree


def test_report_of_a_suites_latest_run(home, tmp_path: Path) -> None:
    alpha = tenant_tree(tmp_path, "alpha")
    beta = tenant_tree(tmp_path, "beta")
    run = lambda h: run_id_of(
        run_cli("run", "--mock", "--eval-dir", str(h / "evals" / "golden"), "--config-dir", str(h / "config"))
    )  # noqa: E731
    run(alpha)
    latest = run(alpha)
    other = run(beta)  # the newest of the store, of another suite
    page = tmp_path / "alpha.html"
    done = run_cli("report", "--suite", "alpha.golden", "--html", str(page))
    assert done.code == 0, done.err
    text = page.read_text()
    assert latest in text and other not in text
    assert run_cli("report", latest, "--suite", "alpha.golden", "--html", str(page)).code == 2
    assert run_cli("report", "--html", str(page)).code == 2
    missing = run_cli("report", "--suite", "gamma.golden", "--html", str(page))
    assert (
        missing.code == 2
        and "suite 'gamma.golden' has no run" in missing.err
        and "alpha.golden, beta.golden" in missing.err
    )

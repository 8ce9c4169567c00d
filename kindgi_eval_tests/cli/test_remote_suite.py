"""`run --suite` reads the registry it is pointed at: over HTTP where KINDGI_REGISTRY_URL is set, from the database here
only where it is not, and a refused `--suite` writes nothing. Real processes against a real registry on 127.0.0.1."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from kindgi_eval.kinds import consumers
from kindgi_eval.registry import EvalSuite, open_store, running_server
from kindgi_eval_tests.conftest import GOLDEN, files_under, run_cli

TENANT = "demo-academy"
"""The tenant of the default configuration, which `run` evaluates for."""


def cases(count: int) -> list[dict]:
    return [json.loads(line) for line in (GOLDEN / "cases.jsonl").read_text().splitlines()[:count]]


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, dict[str, str]]]:
    """A registry on another machine, as far as the run can tell: its database in a folder of its own, served on a
    free port. Yields its URL and tokens by tenant; demo-academy has published pricing 1.0.0 (4 cases) and 1.1.0 (2)."""
    store = open_store(f"sqlite:///{tmp_path / 'elsewhere' / 'registry.sqlite'}")
    tokens = {tenant: store.issue_token(tenant, "runner").secret for tenant in (TENANT, "globex")}
    publisher = store.issue_token(TENANT, "publisher").id
    for version, count in (("1.0.0", 4), ("1.1.0", 2)):
        store.publish(
            TENANT,
            publisher,
            EvalSuite(
                id=f"{TENANT}.pricing",
                tenantId=TENANT,
                version=version,
                kind="conversation",
                spec={"cases": cases(count)},
            ),
        )
    try:
        with running_server(store, consumers(), port=0) as server:
            yield server.url, tokens
    finally:
        store.close()


def test_a_run_reads_the_version_in_force_over_http_and_records_it(served, home) -> None:
    url, tokens = served
    env = {"KINDGI_REGISTRY_URL": url, "KINDGI_REGISTRY_TOKEN": tokens[TENANT]}
    latest = run_cli("run", "--mock", "--suite", f"{TENANT}.pricing", env=env)
    assert latest.code == 0, latest.err
    pinned = run_cli("run", "--mock", "--suite", f"{TENANT}.pricing@1.0.0", env=env)
    assert pinned.code == 0, pinned.err
    rows = json.loads(
        run_cli("sql", "SELECT suite_id, suite_version, cases FROM runs ORDER BY cases", "--format", "json").out
    )
    assert rows == [
        {"suite_id": f"{TENANT}.pricing", "suite_version": "1.1.0", "cases": 2},
        {"suite_id": f"{TENANT}.pricing", "suite_version": "1.0.0", "cases": 4},
    ]
    assert not (home.root / "registry.sqlite").exists()  # the registry here was never opened, so never created


def test_a_suite_the_token_may_not_read_is_refused_and_nothing_is_written(served, home) -> None:
    url, tokens = served
    other = run_cli(
        "run",
        "--mock",
        "--suite",
        f"{TENANT}.pricing",
        env={"KINDGI_REGISTRY_URL": url, "KINDGI_REGISTRY_TOKEN": tokens["globex"]},
    )
    assert other.code == 2
    assert other.err == (
        f"error: --suite: the registry at {url} has no suite '{TENANT}.pricing' your token may read. "
        "List them with: kindgi-eval suites list\n"
    )
    missing = run_cli(
        "run",
        "--mock",
        "--suite",
        f"{TENANT}.pricing@9.9.9",
        env={"KINDGI_REGISTRY_URL": url, "KINDGI_REGISTRY_TOKEN": tokens[TENANT]},
    )
    assert missing.code == 2 and f"has no version 9.9.9 of suite '{TENANT}.pricing'" in missing.err
    assert files_under(home.root) == []


def test_a_url_without_a_token_is_refused_naming_the_variable(served, home) -> None:
    url, _ = served
    refused = run_cli(
        "run", "--mock", "--suite", f"{TENANT}.pricing", env={"KINDGI_REGISTRY_URL": url, "KINDGI_REGISTRY_TOKEN": ""}
    )
    assert refused.code == 2 and refused.err.startswith(
        "error: KINDGI_REGISTRY_TOKEN: is not set, and KINDGI_REGISTRY_URL is."
    )
    assert files_under(home.root) == []


def test_without_a_url_or_a_registry_here_suite_is_refused_and_creates_no_database(home) -> None:
    refused = run_cli(
        "run", "--mock", "--suite", f"{TENANT}.pricing", env={"KINDGI_REGISTRY_URL": "", "KINDGI_REGISTRY_DB": ""}
    )
    assert refused.code == 2
    assert refused.err.startswith(
        f"error: --suite: no registry is here: sqlite:///{home.root / 'registry.sqlite'} does not exist. "
        "Set KINDGI_REGISTRY_URL and KINDGI_REGISTRY_TOKEN"
    )
    assert files_under(home.root) == []


class Tampered(BaseHTTPRequestHandler):
    """A registry whose answer does not hash to the hash it is answered with: a proxy or a cache that changed it."""

    def do_GET(self) -> None:  # noqa: N802 - the standard library's name
        suite = {
            "id": f"{TENANT}.pricing",
            "tenantId": TENANT,
            "version": "1.0.0",
            "kind": "conversation",
            "description": "",
            "spec": {"cases": cases(1)},
        }
        body = json.dumps(
            {"suite": suite, "hash": "0" * 64, "published_at": "2026-12-01T00:00:00Z", "published_by": "t"}
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_: object) -> None:
        pass


def test_an_answer_that_does_not_match_its_hash_runs_nothing(home) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Tampered)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        done = run_cli(
            "run",
            "--mock",
            "--suite",
            f"{TENANT}.pricing",
            env={"KINDGI_REGISTRY_URL": url, "KINDGI_REGISTRY_TOKEN": "x"},
        )
    finally:
        server.shutdown()
        server.server_close()
    assert done.code == 1
    assert done.err == (
        f"error: {url}: the registry answered {TENANT}.pricing 1.0.0 with content that does not hash to its "
        "sha256 000000000000…; nothing was run.\n"
    )
    assert files_under(home.root) == []


def test_a_suite_of_another_tenant_run_without_its_configuration_says_to_pass_config_dir(
    served, home, tmp_path: Path
) -> None:
    from kindgi_eval.registry import database_url

    # over HTTP: the suite read, but the run is for the default configuration's tenant
    url, tokens = served
    config = tmp_path / "globex-config"
    config.mkdir()
    demo = (Path(__file__).parents[2] / "kindgi_eval" / "demo_tenant" / "tenant.toml").read_text()
    (config / "tenant.toml").write_text(demo.replace('tenant = "demo-academy"', 'tenant = "globex"'))
    env = {"KINDGI_REGISTRY_URL": url, "KINDGI_REGISTRY_TOKEN": tokens[TENANT]}
    other = run_cli("run", "--mock", "--suite", f"{TENANT}.pricing", "--config-dir", str(config), env=env)
    assert other.code == 2
    assert other.err == (
        f"error: --suite: {TENANT}.pricing is tenant {TENANT}'s suite, and this run is for tenant 'globex' (its "
        f"tenant configuration's). To run it as tenant {TENANT}, pass --config-dir with that tenant's configuration "
        f'folder (its tenant.toml says tenant = "{TENANT}").\n'
    )
    # the registry here: a suite of tenant globex, named without --config-dir, so for the packaged demo tenant
    store = open_store(database_url(home.root))
    try:
        store.publish(
            "globex",
            store.issue_token("globex", "p").id,
            EvalSuite(
                id="globex.prices", tenantId="globex", version="1.0.0", kind="conversation", spec={"cases": cases(1)}
            ),
        )
    finally:
        store.close()
    local = run_cli("run", "--mock", "--suite", "globex.prices", env={"KINDGI_REGISTRY_URL": ""})
    assert local.code == 2
    assert (
        "has no suite 'globex.prices' of tenant 'demo-academy'. To run it as tenant globex, pass --config-dir with that "
        'tenant\'s configuration folder (its tenant.toml says tenant = "globex").' in local.err
    ), local.err
    assert "token" not in local.err  # no token is read here

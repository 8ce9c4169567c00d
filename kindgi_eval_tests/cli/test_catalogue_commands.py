"""The catalogue through the real command line and a real server: an operator publishes an entry, every tenant lists
and pulls it, no tenant's token writes it, and a benchmark suite naming it runs on a runner that reads the registry
over HTTP with a read token, recording the entry's name, version and hash."""

from __future__ import annotations

import json
from pathlib import Path

from kindgi_eval.inputs import folder_hash
from kindgi_eval_tests.cli.conftest import TENANT, publish, sql
from kindgi_eval_tests.conftest import GOLDEN, run_cli


def _issued(*args: str) -> str:
    done = run_cli("tokens", "issue", *args)
    assert done.code == 0, done.err
    return done.out.strip()


def _standard(folder: Path) -> dict[str, bytes]:
    """A standard suite of six golden cases and the calibration set, laid out as its author wrote it."""
    folder.mkdir()
    cases = [line for line in (GOLDEN / "cases.jsonl").read_text().splitlines() if line.strip()][:6]
    written = {
        "cases.jsonl": ("\n".join(cases) + "\n\n").encode(),
        "calibration.jsonl": (GOLDEN / "calibration.jsonl").read_bytes(),
    }
    for name, data in written.items():
        (folder / name).write_bytes(data)
    return written


def test_an_operator_publishes_an_entry_that_tenants_list_pull_and_run(registry, home, tmp_path) -> None:
    url = str(registry.http.base_url).rstrip("/")
    operator = {
        "KINDGI_REGISTRY_URL": url,
        "KINDGI_REGISTRY_TOKEN": _issued("--scope", "operator", "--name", "catalogue"),
    }
    tenant = {"KINDGI_REGISTRY_URL": url, "KINDGI_REGISTRY_TOKEN": _issued("--tenant", TENANT, "--name", "ci")}
    reader = {"KINDGI_REGISTRY_URL": url, "KINDGI_REGISTRY_TOKEN": _issued("--tenant", TENANT, "--scope", "read")}
    written = _standard(tmp_path / "standard")
    pinned = folder_hash(written)

    args = (
        "catalogue",
        "publish",
        str(tmp_path / "standard"),
        "--name",
        "acme-standards/pricing",
        "--version",
        "1.0.0",
        "--description",
        "Six pricing questions",
    )
    refused = run_cli(*args, env=tenant)
    assert refused.code == 2 and "HTTP 403" in refused.err and "cannot publish to the catalogue" in refused.err, (
        refused.err
    )
    published = run_cli(*args, env=operator)
    assert published.code == 0, published.err
    assert published.out.strip() == f"published: catalogue entry acme-standards/pricing 1.0.0 sha256 {pinned}"
    assert run_cli(*args, env=operator).out.startswith("already published, with the same content")

    listed = run_cli("catalogue", "list", "--format", "json", env=reader)
    assert listed.code == 0, listed.err
    assert [(e["name"], e["version"], e["sha256"]) for e in json.loads(listed.out)] == [
        ("acme-standards/pricing", "1.0.0", pinned),
        ("kindgi/golden", "1.0.0", "779e99baa7ad1c8d68d3f086eefc3af82bc21876ad7f27da72bd459cbae09d6f"),
    ]
    pulled = run_cli("catalogue", "pull", "acme-standards/pricing", "1.0.0", str(tmp_path / "pulled"), env=reader)
    assert pulled.code == 0, pulled.err
    assert {
        p.name: p.read_bytes() for p in (tmp_path / "pulled").iterdir()
    } == written  # byte for byte, blank line and all
    missing = run_cli("catalogue", "pull", "acme-standards/pricing", "2.0.0", str(tmp_path / "none"), env=reader)
    assert missing.code == 2 and "the catalogue holds no such entry" in missing.err and not (tmp_path / "none").exists()

    publish(
        registry.http,
        f"{TENANT}.pricing-standard",
        "benchmark",
        {"benchmark": {"name": "acme-standards/pricing", "version": "1.0.0"}},
    )
    out = tmp_path / "summary.json"
    done = run_cli("run", "--mock", "--suite", f"{TENANT}.pricing-standard", "--json", str(out), env=reader)
    assert done.code == 0, done.out + done.err
    summary = json.loads(out.read_text())
    assert summary["benchmark"] == {"name": "acme-standards/pricing", "version": "1.0.0", "hash": pinned}
    (row,) = sql("SELECT benchmark_name, benchmark_version, benchmark_hash, cases FROM benchmark_runs")
    assert row == {
        "benchmark_name": "acme-standards/pricing",
        "benchmark_version": "1.0.0",
        "benchmark_hash": pinned,
        "cases": 6,
    }


def test_a_benchmark_document_naming_no_entry_is_refused_before_it_is_sent(registry, home, tmp_path) -> None:
    url = str(registry.http.base_url).rstrip("/")
    tenant = {"KINDGI_REGISTRY_URL": url, "KINDGI_REGISTRY_TOKEN": _issued("--tenant", TENANT)}
    document = {
        "id": f"{TENANT}.std",
        "tenantId": TENANT,
        "version": "1.0.0",
        "kind": "benchmark",
        "spec": {"benchmark": {"name": "kindgi/golden", "version": "2.0.0"}},
    }
    (tmp_path / "suite.json").write_text(json.dumps(document))
    done = run_cli("suites", "publish", str(tmp_path / "suite.json"), env=tenant)
    assert (
        done.code == 2
        and "the catalogue holds no benchmark kindgi/golden 2.0.0; it holds kindgi/golden 1.0.0" in done.err
    ), done.err
    assert run_cli("suites", "list", env=tenant).out.count(f"{TENANT}.std") == 0


def test_an_operator_token_is_issued_without_a_tenant_and_listed_and_revoked_as_one(home) -> None:
    refused = run_cli("tokens", "issue", "--scope", "operator", "--tenant", "acme")
    assert refused.code == 2 and "tenant: is not given to an operator token: it acts for no tenant" in refused.err
    no_tenant = run_cli("tokens", "issue", "--scope", "read")
    assert (
        no_tenant.code == 2
        and "tenant: is required: a token of scope read or publish acts for one tenant" in no_tenant.err
    )
    issued = run_cli("tokens", "issue", "--scope", "operator", "--name", "catalogue")
    assert issued.code == 0 and "for the catalogue (catalogue), scope operator" in issued.err, issued.err
    (token,) = json.loads(run_cli("tokens", "list", "--format", "json").out)
    assert (token["tenant"], token["scope"], token["name"]) == ("", "operator", "catalogue")
    revoked = run_cli("tokens", "revoke", token["id"])
    assert revoked.code == 0 and revoked.out.startswith(f"revoked {token['id']} (an operator's) at "), revoked.out

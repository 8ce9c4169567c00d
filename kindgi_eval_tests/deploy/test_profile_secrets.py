"""The production profile's rules of which service holds which secret, and of the handlers' memory on the machine,
read from deploy/production.py directly (the profile's own test starts it and reads each service's environment)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from kindgi_eval_tests.inputs.test_tenants_file import entry, tenant_tree, write_tenants

PROFILE = Path(__file__).resolve().parents[2] / "deploy" / "production.py"
sys.path.insert(0, str(PROFILE.parent))
import production  # noqa: E402 - the profile's own script


@pytest.mark.parametrize(
    ("name", "value", "kept"),
    [
        ("PATH", "/usr/bin", True),
        ("KINDGI_TENANTS", "/srv/tenants.toml", True),
        ("OPENAI_BASE_URL", "http://127.0.0.1:9000/v1", True),
        ("EVAL_AGENT_URL", "https://agent.example/turn", True),
        ("OPENAI_API_KEY", "sk-1", False),
        ("LITELLM_MASTER_KEY", "sk-2", False),
        ("KINDGI_REGISTRY_TOKEN", "kgi_x", False),
        ("GITHUB_TOKEN", "ghp_x", False),
        ("SOME_SECRET_THING", "x", False),
        ("PGPASSWORD", "x", False),
        ("DAGSTER_PG_HOST", "db.internal", False),
        ("KINDGI_REGISTRY_DB", "sqlite:///r.sqlite", False),
        ("DATABASE_URL", "postgresql://db/x", False),
        ("AWS_PROFILE", "prod", False),
        ("GOOGLE_APPLICATION_CREDENTIALS", "/k.json", False),
        ("EVAL_AGENT_URL", "https://user:pw@agent.example/turn", False),  # a password in a URL, whatever the name
    ],
)
def test_no_variable_that_may_hold_a_secret_reaches_a_service_unnamed(name: str, value: str, kept: bool) -> None:
    assert (name in production.without_secrets({name: value})) is kept


def test_a_webhook_the_tenants_file_names_reaches_no_service_unnamed(tmp_path: Path, monkeypatch) -> None:
    # a webhook's URL is a secret whatever its variable is called: the daemon alone is given it, by name
    tenant_tree(tmp_path, "acme")
    tenant_tree(tmp_path, "bolt")
    tenants = write_tenants(tmp_path / "tenants.toml", entry("acme", alerts=["ACME_CHANNEL"]), entry("bolt"))
    tenants.write_text(tenants.read_text() + '\n[defaults]\nalerts = ["OPS_CHANNEL"]\n')
    monkeypatch.setenv("KINDGI_TENANTS", str(tenants))
    assert production.webhook_variables() == ["ACME_CHANNEL", "OPS_CHANNEL"]
    caller = {"PATH": "/usr/bin", "ACME_CHANNEL": "https://hooks.example/a", "OPS_CHANNEL": "https://hooks.example/o"}
    assert production.without_secrets(caller) == {"PATH": "/usr/bin"}
    monkeypatch.delenv("KINDGI_TENANTS")
    assert production.without_secrets(caller) == caller  # no tenants file, no webhook it names


PROFILE_ENV = {
    "DAGSTER_HOME": "/p/dagster",
    "DAGSTER_PG_PASSWORD": "pw",
    "KINDGI_HOME": "/p/home",
    "KINDGI_STORE": "s3://kindgi/store",
    "AWS_ENDPOINT_URL": "http://127.0.0.1:1",
    "AWS_SECRET_ACCESS_KEY": "s",
    "AWS_DEFAULT_REGION": "us-east-1",
    "KINDGI_GATEWAY_URL": "http://127.0.0.1:2",
    "KINDGI_GATEWAY_KEY": "call",
    "KINDGI_REGISTRY_URL": "http://127.0.0.1:3",
    "KINDGI_REGISTRY_TOKEN": "kgi_n",
    "KINDGI_REGISTRY_DB": "postgresql://k:pw@h/r",
    "KINDGI_HANDLER_CGROUP": "profile-1",
    "KINDGI_SCHEDULE_CRON": "0 2 * * *",
}
"""The variables a started profile holds (its `<dir>/env`), by name."""


@pytest.mark.parametrize(
    ("service", "holds"),
    [
        ("daemon", set(PROFILE_ENV) - {"KINDGI_REGISTRY_DB"}),
        (
            "webserver",
            set(PROFILE_ENV)
            - {
                "KINDGI_REGISTRY_DB",
                "AWS_SECRET_ACCESS_KEY",
                "KINDGI_GATEWAY_KEY",
                "KINDGI_REGISTRY_TOKEN",
                "KINDGI_HANDLER_CGROUP",
            },
        ),
    ],
)
def test_each_dagster_service_is_given_the_profiles_variables_it_uses(service: str, holds: set[str]) -> None:
    assert set(production.service_env(service, {"PATH": "/usr/bin"}, PROFILE_ENV)) == holds | {"PATH"}


def test_the_gateway_is_given_the_keys_its_config_reads_and_a_config_with_a_key_check_of_its_own_is_refused(
    tmp_path: Path,
) -> None:
    assert production.config_variables(production.GATEWAY_CONFIG) == [
        "ANTHROPIC_API_KEY",
        "LITELLM_MASTER_KEY",
        "OPENAI_API_KEY",
    ]
    written = production.gateway_config(production.GATEWAY_CONFIG, tmp_path / "gateway")
    assert (
        "custom_auth: gateway_keys.authenticate" in written.read_text()
        and (tmp_path / "gateway" / "gateway_keys.py").is_file()
    )
    own = tmp_path / "own.yaml"
    own.write_text(
        "model_list: []\ngeneral_settings:\n  master_key: os.environ/LITELLM_MASTER_KEY\n  custom_auth: mine.check\n"
    )
    with pytest.raises(SystemExit) as refused:
        production.gateway_config(own, tmp_path / "other")
    assert refused.value.code == 2


@pytest.mark.parametrize(
    ("total_gib", "runs", "left_mib"), [(24, 8, 16384), (24, 2, 19456), (16, 2, 11264), (6, 2, 1024)]
)
def test_the_handlers_hold_the_machines_memory_less_the_services_and_each_run_at_once(
    total_gib: int, runs: int, left_mib: int
) -> None:
    assert production.handlers_memory(runs, total=total_gib << 30) == left_mib << 20


def test_a_machine_that_leaves_the_handlers_too_little_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as refused:
        production.handlers_memory(8, total=8 << 30)
    assert refused.value.code == 2 and "lower --max-concurrent-runs" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("user", "password", "line"),
    [
        ("kindgi", "s3cret", '"kindgi" "s3cret"\n'),
        ("kindgi", 'a"b', '"kindgi" "a""b"\n'),  # a quote in the password is doubled, as PgBouncer reads it
        ("ops team", "p w", '"ops team" "p w"\n'),  # spaces stay inside the quotes
    ],
)
def test_the_pooler_s_users_file_holds_the_one_user_quoted(user: str, password: str, line: str) -> None:
    assert production.pooler_users(user, password) == line


def test_the_pooler_listens_on_127_0_0_1_for_the_dagster_database_alone_and_lets_its_user_only_read_figures(
    tmp_path: Path,
) -> None:
    server = {"DAGSTER_PG_HOST": "db.internal", "DAGSTER_PG_PORT": "5433", "DAGSTER_PG_USERNAME": "kindgi"}
    config = production.pooler_config(6999, server, "kindgi_ab_dagster", tmp_path / "users.txt")
    lines = set(config.splitlines())
    assert "kindgi_ab_dagster = host=db.internal port=5433 dbname=kindgi_ab_dagster" in lines
    assert [line for line in lines if line.startswith("* ")] == []  # no other database reaches the server
    assert {"listen_addr = 127.0.0.1", "listen_port = 6999", "unix_socket_dir =", "pool_mode = session"} <= lines
    assert "auth_type = scram-sha-256" in lines and f"auth_file = {tmp_path / 'users.txt'}" in lines
    assert "stats_users = kindgi" in lines and not any(line.startswith("admin_users") for line in lines)

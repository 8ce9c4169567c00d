"""The schema is Alembic's to make, on first use, on both backends, and it is what the store's tables say."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext

from kindgi_eval.registry import database_url, open_store
from kindgi_eval.registry.database import METADATA, VERSION_TABLE, current_revision, head_revision, migrate
from kindgi_eval.rules import InputError


def test_the_migrated_schema_is_the_tables_the_store_uses(registry) -> None:
    with registry.store.engine.connect() as connection:
        context = MigrationContext.configure(connection, opts={"version_table": VERSION_TABLE})
        assert compare_metadata(context, METADATA) == []
    assert current_revision(registry.store.engine) == head_revision()


def test_first_use_creates_the_file_and_later_uses_migrate_nothing(tmp_path: Path) -> None:
    url = database_url(tmp_path / "home", {})
    assert url == f"sqlite:///{tmp_path / 'home' / 'registry.sqlite'}"
    store = open_store(url)
    token = store.issue_token("acme")
    store.close()
    assert (tmp_path / "home" / "registry.sqlite").is_file()
    again = open_store(url)
    migrate(again.engine)  # at head: a no-op
    assert [t.id for t in again.list_tokens()] == [token.id]
    with again.engine.connect() as connection:
        tables = set(sa.inspect(connection).get_table_names())
    assert tables == {
        "registry_tokens",
        "registry_suites",
        "registry_versions",
        "registry_idempotency_keys",
        "registry_catalogue",
        VERSION_TABLE,
    }
    again.close()


def test_kindgi_registry_db_names_another_database(tmp_path: Path) -> None:
    assert database_url(tmp_path, {"KINDGI_REGISTRY_DB": "postgresql://u@db/registry"}) == "postgresql://u@db/registry"


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("not a url", "is not a SQLAlchemy URL"),
        ("nosuchdb://x/y", "no database driver"),
        ("sqlite://", "in-memory"),
        ("postgresql://kindgi:secret-pw@127.0.0.1:1/none", "cannot open the registry database"),
    ],
)
def test_a_database_that_cannot_be_opened_is_an_input_error(url: str, said: str) -> None:
    with pytest.raises(InputError) as e:
        open_store(url)
    assert said in str(e.value) and "secret-pw" not in str(e.value)


def test_versions_published_before_the_summary_column_are_listed_with_their_description(tmp_path: Path) -> None:
    from alembic import command

    from kindgi_eval.registry.database import _alembic_config

    url = f"sqlite:///{tmp_path / 'old.sqlite'}"
    engine = sa.create_engine(url)
    with engine.connect() as connection, connection.begin():
        command.upgrade(_alembic_config(connection), "0002")  # the schema as an earlier release left it
        document = json.dumps(
            {
                "id": "acme.pricing",
                "tenantId": "acme",
                "version": "1.0.0",
                "kind": "conversation",
                "description": "Pricing questions " * 40,
                "spec": {},
            }
        )
        connection.exec_driver_sql("INSERT INTO registry_tokens VALUES ('t1', 'acme', '', 'h', 'now', NULL, NULL)")
        connection.exec_driver_sql("INSERT INTO registry_suites VALUES ('acme', 'acme.pricing', '1.0.0', 'now')")
        connection.exec_driver_sql(
            "INSERT INTO registry_versions VALUES ('acme', 'acme.pricing', '1.0.0', 'conversation', "
            f"'{'0' * 64}', ?, 't1', 'now')",
            (document,),
        )
    engine.dispose()
    store = open_store(url)  # migrates to the head
    (listed,), more = store.list_suites("acme", None, 10)
    assert listed.description == ("Pricing questions " * 40)[:200] and not more
    store.close()


def test_versions_published_before_files_were_kept_keep_none(tmp_path: Path) -> None:
    from alembic import command

    from kindgi_eval.registry.database import _alembic_config

    url = f"sqlite:///{tmp_path / 'old.sqlite'}"
    engine = sa.create_engine(url)
    with engine.connect() as connection, connection.begin():
        command.upgrade(_alembic_config(connection), "0003")  # the schema before a version kept its folder's files
        connection.exec_driver_sql("INSERT INTO registry_tokens VALUES ('t1', 'acme', '', 'h', 'now', NULL, NULL)")
        connection.exec_driver_sql("INSERT INTO registry_suites VALUES ('acme', 'acme.pricing', '1.0.0', 'now')")
        connection.exec_driver_sql(
            "INSERT INTO registry_versions VALUES ('acme', 'acme.pricing', '1.0.0', 'conversation', "
            f"'{'0' * 64}', '{{}}', 't1', 'now', '\"\"')"
        )
    engine.dispose()
    store = open_store(url)  # migrates to the head
    assert store.files("acme", "acme.pricing", "1.0.0") is None  # so a pull writes its spec's items, one per line
    kept = store.keep_files("acme", "acme.pricing", "1.0.0", {"cases.jsonl": "{}\n"})
    assert kept.status == 201 and store.files("acme", "acme.pricing", "1.0.0") == {"cases.jsonl": "{}\n"}
    store.close()


def test_tokens_issued_before_scopes_keep_publishing_and_never_expire(tmp_path: Path) -> None:
    from alembic import command

    from kindgi_eval.registry.database import _alembic_config

    url = f"sqlite:///{tmp_path / 'old.sqlite'}"
    engine = sa.create_engine(url)
    with engine.connect() as connection, connection.begin():
        command.upgrade(_alembic_config(connection), "0004")  # the schema before a token had a scope or an expiry
        connection.exec_driver_sql("INSERT INTO registry_tokens VALUES ('t1', 'acme', 'old', 'h', 'now', NULL, NULL)")
    engine.dispose()
    store = open_store(url)  # migrates to the head
    (token,) = store.list_tokens()
    assert (token.id, token.scope, token.expires_at) == ("t1", "publish", None)
    store.close()

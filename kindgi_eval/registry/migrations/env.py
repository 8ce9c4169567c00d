"""Alembic's entry point for the registry's migrations: run on the connection `database.migrate` hands over."""

from __future__ import annotations

from alembic import context

from kindgi_eval.registry.database import METADATA, VERSION_TABLE

connection = context.config.attributes.get("connection")
if connection is None:
    raise RuntimeError(
        "the registry migrates itself on first use (kindgi_eval.registry.database.migrate); "
        "run `kindgi-eval serve` or `kindgi-eval tokens list` instead of the alembic command"
    )
context.configure(connection=connection, target_metadata=METADATA, version_table=VERSION_TABLE)
with context.begin_transaction():
    context.run_migrations()

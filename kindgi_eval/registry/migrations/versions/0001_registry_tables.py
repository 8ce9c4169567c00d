"""The registry's first tables: tokens, suites, versions, idempotency keys.

Revision ID: 0001
Revises:
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def _key(length: int) -> sa.types.TypeEngine:
    # compared byte by byte on PostgreSQL too, so a cursor orders alike on both backends
    return sa.String(length).with_variant(sa.String(length, collation="C"), "postgresql")


def upgrade() -> None:
    op.create_table(
        "registry_tokens",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("tenant", sa.String(128), nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("secret_sha256", sa.String(64), nullable=False, unique=True),
        sa.Column("created_at", sa.String(32), nullable=False),
        sa.Column("last_used_at", sa.String(32)),
        sa.Column("revoked_at", sa.String(32)),
    )
    op.create_table(
        "registry_suites",
        sa.Column("tenant", _key(128), primary_key=True),
        sa.Column("suite_id", _key(128), primary_key=True),
        sa.Column("latest_version", sa.String(64), nullable=False),
        sa.Column("created_at", sa.String(32), nullable=False),
    )
    op.create_table(
        "registry_versions",
        sa.Column("tenant", _key(128), primary_key=True),
        sa.Column("suite_id", _key(128), primary_key=True),
        sa.Column("version", sa.String(64), primary_key=True),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("sha256", sa.String(64), nullable=False),
        sa.Column("document", sa.Text, nullable=False),
        sa.Column("published_by", sa.String(32), sa.ForeignKey("registry_tokens.id"), nullable=False),
        sa.Column("published_at", sa.String(32), nullable=False),
        sa.ForeignKeyConstraint(["tenant", "suite_id"], ["registry_suites.tenant", "registry_suites.suite_id"]),
    )
    op.create_table(
        "registry_idempotency_keys",
        sa.Column("tenant", sa.String(128), primary_key=True),
        sa.Column("key", sa.String(255), primary_key=True),
        sa.Column("request_sha256", sa.String(64), nullable=False),
        sa.Column("status", sa.Integer, nullable=False),
        sa.Column("etag", sa.String(66), nullable=False),
        sa.Column("body", sa.Text, nullable=False),
        sa.Column("created_at", sa.String(32), nullable=False),
    )


def downgrade() -> None:
    for table in ("registry_idempotency_keys", "registry_versions", "registry_suites", "registry_tokens"):
        op.drop_table(table)

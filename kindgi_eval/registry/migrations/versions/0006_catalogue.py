"""The catalogue of standard suites, shared by every tenant, seeded with the entry shipped in the package (the demo
tenant's golden set, `kindgi/golden` 1.0.0): seeded once, here, and from then on an entry like any other.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-02
"""

from __future__ import annotations

import json

import sqlalchemy as sa
from alembic import op

from kindgi_eval.inputs import CATALOGUE_SEED
from kindgi_eval.registry.storage import utc_now

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    key = sa.String(129).with_variant(sa.String(129, collation="C"), "postgresql")
    table = op.create_table(
        "registry_catalogue",
        sa.Column("name", key, primary_key=True),
        sa.Column("version", sa.String(64), primary_key=True),
        sa.Column("sha256", sa.String(64), nullable=False),
        sa.Column("description", sa.Text, nullable=False),
        sa.Column("files", sa.Text, nullable=False),
        sa.Column("published_at", sa.String(32), nullable=False),
        sa.Column("published_by", sa.String(32), nullable=False),
    )
    seed = CATALOGUE_SEED
    op.bulk_insert(
        table,
        [
            {
                "name": seed.name,
                "version": seed.version,
                "sha256": seed.sha256,
                "description": seed.description,
                "files": json.dumps(seed.files(), sort_keys=True, ensure_ascii=False),
                "published_at": utc_now(),
                "published_by": "package",
            }
        ],
    )


def downgrade() -> None:
    op.drop_table("registry_catalogue")

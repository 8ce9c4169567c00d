"""Each version's description clipped into a column of its own (as a JSON string), so a listing reads no document.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-01
"""

from __future__ import annotations

import json

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

LISTED_DESCRIPTION = 200  # the registry's database.LISTED_DESCRIPTION when this revision was written


def upgrade() -> None:
    op.add_column("registry_versions", sa.Column("summary", sa.Text, nullable=False, server_default='""'))
    versions = sa.table(
        "registry_versions",
        sa.column("tenant"),
        sa.column("suite_id"),
        sa.column("version"),
        sa.column("document"),
        sa.column("summary"),
    )
    connection = op.get_bind()
    for tenant, suite_id, version, document in connection.execute(
        sa.select(versions.c.tenant, versions.c.suite_id, versions.c.version, versions.c.document)
    ).all():
        summary = json.dumps(str(json.loads(document).get("description", ""))[:LISTED_DESCRIPTION])
        connection.execute(
            versions.update()
            .where(versions.c.tenant == tenant, versions.c.suite_id == suite_id, versions.c.version == version)
            .values(summary=summary)
        )


def downgrade() -> None:
    op.drop_column("registry_versions", "summary")

"""A token's scope (`read`: list, show, pull; `publish`: those and publishing) and the moment it expires (NULL: never).
Tokens issued before this revision keep what they could do: scope `publish`, no expiry.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("registry_tokens") as table:
        table.add_column(sa.Column("scope", sa.String(16), nullable=False, server_default="publish"))
        table.add_column(sa.Column("expires_at", sa.String(32)))


def downgrade() -> None:
    with op.batch_alter_table("registry_tokens") as table:
        table.drop_column("expires_at")
        table.drop_column("scope")

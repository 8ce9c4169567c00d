"""The texts of the suite files a version was published from, beside it (a JSON object of name to text), so a pull
writes them back byte for byte; NULL for a version published as a document, and for every version before this one.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("registry_versions", sa.Column("files", sa.Text))


def downgrade() -> None:
    op.drop_column("registry_versions", "files")

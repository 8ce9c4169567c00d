"""Two ids of one tenant that differ only in case share a partition: a unique index on the tenant and the id's lower case.

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("registry_suites_partition", "registry_suites", ["tenant", sa.text("lower(suite_id)")], unique=True)


def downgrade() -> None:
    op.drop_index("registry_suites_partition", table_name="registry_suites")

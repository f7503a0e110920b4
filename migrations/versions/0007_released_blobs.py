"""Released blobs: an erased tenant's blobs go with the next garbage collection.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-26

``released_blobs`` records, in the erase's own transaction, the blobs whose last references a
tenant erase deleted, so that the next ``gc`` deletes them whatever their age instead of
waiting out its grace period (`convstore.store.released_blobs`). A new, empty table: no row
changes on the way up; the downgrade drops it, and those blobs are then collected by age
like any other unreferenced blob.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from convstore.db.types import UTCDateTime

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "released_blobs",
        sa.Column("namespace", sa.String(64), nullable=False),
        sa.Column("sha256", sa.String(64), nullable=False),
        sa.Column("released_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("namespace", "sha256", name=op.f("pk_released_blobs")),
    )


def downgrade() -> None:
    op.drop_table("released_blobs")

"""PostgreSQL search: a tenant's titles found by that tenant's own index entries.

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-29

Adds ``ix_search_titles_tenant_created`` on ``search_titles (tenant, created_at)``, on
PostgreSQL only. A tenant's title arm of a search (`convstore.db.search_statements`) asks for
that tenant's newest matching titles; with only ``(created_at)`` and the trigram GIN to choose
from, the planner read the whole table (a term absent for the tenant read every tenant's titles:
about a thousand rows on a database shared with other tenants, five on an empty one), so the
time a tenant's search took followed how many conversations other tenants had (issue 32,
finding 7). With this index the tenant's rows are the only ones read, newest first, as
``ix_search_docs_tenant_created`` already does for messages. No row changes; SQLite (whose
index ids carry the tenant) is untouched. The downgrade drops the index.
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_NAME = "ix_search_titles_tenant_created"


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.create_index(_NAME, "search_titles", ["tenant", "created_at"])


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.drop_index(_NAME, table_name="search_titles")

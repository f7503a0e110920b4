"""Pop without scans: a message's children and its calls are found by index.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-26

- ``ix_messages_branch_children`` indexes ``messages (conversation_id, parent_seq)`` for the
  children that do not follow their parent by one ``seq`` (the first message of a branch, or
  of an append after a pop). Every other child of message ``s`` is the message ``s + 1``,
  found by the primary key, so whether a message has children is two index lookups, while an
  append that continues a chain writes nothing to the index.
- ``tool_calls`` refers to its conversation (``ON DELETE CASCADE``) instead of to the message
  that made the call. Deleting a message had to look its calls up by ``(conversation_id,
  seq)``, which no index serves, so each message delete scanned the conversation's calls, and
  deleting a conversation scanned them once per message. The store deletes a popped message's
  calls itself.

No row changes on the way up. On SQLite ``tool_calls`` is rebuilt (batch mode; the store's
migration connection has foreign keys off, so no cascade fires). The downgrade restores the
reference to the message, first deleting calls whose message is gone (none, unless something
other than the store deleted messages).
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_CHILD_CONDITION = "parent_seq <> seq - 1"
_TO_MESSAGE = "fk_tool_calls_conversation_id_seq_messages"
_TO_CONVERSATION = "fk_tool_calls_conversation_id_conversations"


def upgrade() -> None:
    op.create_index(
        "ix_messages_branch_children",
        "messages",
        ["conversation_id", "parent_seq"],
        sqlite_where=sa.text(_CHILD_CONDITION),
        postgresql_where=sa.text(_CHILD_CONDITION),
    )
    _refer_calls(
        drop=_TO_MESSAGE,
        create=_TO_CONVERSATION,
        referent="conversations",
        local=["conversation_id"],
        remote=["id"],
    )


def downgrade() -> None:
    op.execute(
        "DELETE FROM tool_calls WHERE NOT EXISTS (SELECT 1 FROM messages "
        "WHERE messages.conversation_id = tool_calls.conversation_id "
        "AND messages.seq = tool_calls.seq)"
    )
    _refer_calls(
        drop=_TO_CONVERSATION,
        create=_TO_MESSAGE,
        referent="messages",
        local=["conversation_id", "seq"],
        remote=["conversation_id", "seq"],
    )
    op.drop_index("ix_messages_branch_children", table_name="messages")


def _refer_calls(
    *, drop: str, create: str, referent: str, local: list[str], remote: list[str]
) -> None:
    """Swap ``tool_calls``' foreign key ``drop`` for ``create``."""
    if op.get_bind().dialect.name != "sqlite":
        op.drop_constraint(drop, "tool_calls", type_="foreignkey")
        op.create_foreign_key(create, "tool_calls", referent, local, remote, ondelete="CASCADE")
        return
    # A rebuilt table gets its indexes back from reflection; a partial index's condition is
    # restated here rather than trusted to it.
    op.drop_index("ix_tool_calls_pending", table_name="tool_calls")
    with op.batch_alter_table("tool_calls", recreate="always") as batch:
        batch.drop_constraint(drop, type_="foreignkey")
        batch.create_foreign_key(create, referent, local, remote, ondelete="CASCADE")
    op.create_index(
        "ix_tool_calls_pending",
        "tool_calls",
        ["conversation_id", "seq"],
        sqlite_where=sa.text("status = 'pending'"),
        postgresql_where=sa.text("status = 'pending'"),
    )

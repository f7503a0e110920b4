"""Schema v2: parts as one JSON column, branches, state and revisions, blob references.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-25

Upgrades a populated v1 database in place and downgrades back to 0001 keeping everything v1
can represent (v2-only data — message ids, native records, usage, state, branch heads — is
dropped by the downgrade; messages of every branch stay, in ``seq`` order).

- ``messages`` gains ``parent_seq`` (v1 histories are chains: the previous ``seq``),
  ``message_id``, ``parts`` (the rows of ``parts`` folded into one JSON array per message, in
  the form `convstore.db.mapping` reads), ``native`` and ``usage``.
- ``parts`` is replaced by ``blob_refs`` (one row per message and blob it references, with the
  blob namespace: v1 blobs are all in the shared namespace ``""``); ``blob_tombstones`` marks
  blobs garbage collection is deleting.
- ``conversations`` gains ``state``, ``head_seq`` (the newest message), ``revision`` and
  ``branched``; it is listed by creation time, so its index moves from ``updated_at`` (which
  every append rewrote) to ``created_at``.
- ``compactions`` is keyed by ``(conversation_id, id)``, with no global sequence.
- ``tool_calls``: the ``(conversation_id, status)`` index becomes a partial index of pending
  calls; ``cancelled_at`` keeps a cancellation when another path answers the call.

The conversion between part rows and JSON is written out here rather than imported, so that this
revision keeps doing what it did whatever later code does. Tables change with native ``ALTER
TABLE`` where SQLite allows it: recreating a parent table (batch mode) would fire the
``ON DELETE CASCADE`` of its children, since the store's connections enforce foreign keys.
"""

from collections.abc import Iterator, Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op

from convstore.db.types import UTCDateTime

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_THINKING_FIELDS = (
    "provider",
    "model",
    "signature",
    "redacted_data",
    "reasoning_id",
    "encrypted_content",
    "summary",
    "rides_on",
    "provider_details",
)

_messages = sa.table(
    "messages",
    sa.column("conversation_id", sa.String),
    sa.column("seq", sa.Integer),
    sa.column("parent_seq", sa.Integer),
    sa.column("parts", sa.JSON),
)
_parts = sa.table(
    "parts",
    sa.column("conversation_id", sa.String),
    sa.column("seq", sa.Integer),
    sa.column("idx", sa.Integer),
    sa.column("parent_idx", sa.Integer),
    sa.column("kind", sa.String),
    sa.column("text", sa.Text),
    sa.column("call_id", sa.String),
    sa.column("result_kind", sa.String),
    sa.column("media_type", sa.String),
    sa.column("blob_sha256", sa.String),
    sa.column("data", sa.JSON(none_as_null=True)),
)
_tool_calls = sa.table(
    "tool_calls",
    sa.column("conversation_id", sa.String),
    sa.column("id", sa.String),
    sa.column("name", sa.String),
    sa.column("provider_id", sa.String),
    sa.column("arguments", sa.JSON),
    sa.column("raw_arguments", sa.Text),
    sa.column("details", sa.JSON(none_as_null=True)),
)
_blob_refs = sa.table(
    "blob_refs",
    sa.column("conversation_id", sa.String),
    sa.column("seq", sa.Integer),
    sa.column("sha256", sa.String),
)
_compactions = sa.table(
    "compactions",
    sa.column("conversation_id", sa.String),
    sa.column("id", sa.Integer),
)

_BATCH = 500


# ---------------------------------------------------------------------------------------------
# upgrade


def upgrade() -> None:
    bind = op.get_bind()
    op.add_column("conversations", sa.Column("state", sa.JSON(), nullable=True))
    op.add_column("conversations", sa.Column("head_seq", sa.Integer(), nullable=True))
    op.add_column(
        "conversations",
        sa.Column("revision", sa.String(length=32), server_default="0", nullable=False),
    )
    op.add_column(
        "conversations",
        sa.Column("branched", sa.Boolean(), server_default=sa.text("false"), nullable=False),
    )
    op.drop_index(op.f("ix_conversations_tenant_updated_at"), table_name="conversations")
    op.create_index(
        op.f("ix_conversations_tenant_created_at"), "conversations", ["tenant", "created_at"]
    )
    op.add_column("messages", sa.Column("parent_seq", sa.Integer(), nullable=True))
    op.add_column("messages", sa.Column("message_id", sa.String(length=255), nullable=True))
    op.add_column(
        "messages",
        sa.Column("parts", sa.JSON(), server_default=sa.text("'[]'"), nullable=False),
    )
    op.add_column("messages", sa.Column("native", sa.JSON(), nullable=True))
    op.add_column("messages", sa.Column("usage", sa.JSON(), nullable=True))
    op.create_index(
        op.f("ix_messages_conversation_id_message_id"),
        "messages",
        ["conversation_id", "message_id"],
        unique=True,
        sqlite_where=sa.text("message_id IS NOT NULL"),
        postgresql_where=sa.text("message_id IS NOT NULL"),
    )
    op.create_index(
        "ix_messages_message_id",
        "messages",
        ["message_id"],
        sqlite_where=sa.text("message_id IS NOT NULL"),
        postgresql_where=sa.text("message_id IS NOT NULL"),
    )
    op.create_table(
        "blob_refs",
        sa.Column("conversation_id", sa.String(length=64), nullable=False),
        sa.Column("seq", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("sha256", sa.String(length=64), nullable=False),
        sa.Column("namespace", sa.String(length=64), server_default=sa.text("''"), nullable=False),
        sa.ForeignKeyConstraint(
            ["conversation_id", "seq"],
            ["messages.conversation_id", "messages.seq"],
            name=op.f("fk_blob_refs_conversation_id_seq_messages"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["sha256"], ["attachments.sha256"], name=op.f("fk_blob_refs_sha256_attachments")
        ),
        sa.PrimaryKeyConstraint("conversation_id", "seq", "sha256", name=op.f("pk_blob_refs")),
    )
    op.create_index(op.f("ix_blob_refs_sha256"), "blob_refs", ["sha256"])
    op.create_table(
        "blob_tombstones",
        sa.Column("namespace", sa.String(length=64), nullable=False),
        sa.Column("sha256", sa.String(length=64), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("deleted_at", UTCDateTime(), nullable=True),
        sa.PrimaryKeyConstraint("namespace", "sha256", name=op.f("pk_blob_tombstones")),
    )

    # v1 histories are chains with contiguous sequence numbers.
    op.execute("UPDATE messages SET parent_seq = seq - 1 WHERE seq > 1")
    op.execute(
        "UPDATE conversations SET head_seq = (SELECT max(m.seq) FROM messages m "
        "WHERE m.conversation_id = conversations.id)"
    )
    _fold_parts(bind)
    bind.execute(
        sa.insert(_blob_refs).from_select(
            ["conversation_id", "seq", "sha256"],
            sa.select(_parts.c.conversation_id, _parts.c.seq, _parts.c.blob_sha256)
            .where(_parts.c.blob_sha256.is_not(None))
            .distinct(),
        )
    )
    op.drop_index(op.f("ix_parts_blob_sha256"), table_name="parts")
    op.drop_table("parts")

    op.add_column("tool_calls", sa.Column("cancelled_at", UTCDateTime(), nullable=True))
    op.execute("UPDATE tool_calls SET cancelled_at = completed_at WHERE status = 'cancelled'")
    op.drop_index(op.f("ix_tool_calls_conversation_id_status"), table_name="tool_calls")
    op.create_index(
        "ix_tool_calls_pending",
        "tool_calls",
        ["conversation_id", "seq"],
        sqlite_where=sa.text("status = 'pending'"),
        postgresql_where=sa.text("status = 'pending'"),
    )

    op.drop_index(op.f("ix_compactions_conversation_id_id"), table_name="compactions")
    if bind.dialect.name == "sqlite":
        # compactions is a leaf table: recreating it cascades nothing.
        with op.batch_alter_table("compactions", recreate="always") as batch:
            batch.drop_constraint("pk_compactions", type_="primary")
            batch.create_primary_key("pk_compactions", ["conversation_id", "id"])
    else:
        op.drop_constraint("pk_compactions", "compactions", type_="primary")
        op.create_primary_key("pk_compactions", "compactions", ["conversation_id", "id"])
        op.alter_column("compactions", "id", server_default=None)
        op.execute("DROP SEQUENCE IF EXISTS compactions_id_seq")


def _fold_parts(bind: sa.Connection) -> None:
    """Write each message's part rows as its ``parts`` JSON array."""
    calls = {
        (row.conversation_id, row.id): row
        for row in bind.execute(sa.select(_tool_calls)).mappings()
    }
    updates: list[dict[str, Any]] = []
    for (cid, seq), rows in _grouped(bind):
        top = [r for r in rows if r["parent_idx"] is None]
        children: dict[int, list[dict[str, Any]]] = {}
        for r in rows:
            if r["parent_idx"] is not None:
                children.setdefault(r["parent_idx"], []).append(r)
        parts = [
            _part_json(r, children.get(r["idx"], []), calls.get((cid, r["call_id"]))) for r in top
        ]
        updates.append({"b_cid": cid, "b_seq": seq, "parts": parts})
        if len(updates) >= _BATCH:
            _write_parts(bind, updates)
            updates = []
    _write_parts(bind, updates)


def _grouped(bind: sa.Connection) -> Iterator[tuple[tuple[str, int], list[dict[str, Any]]]]:
    current: tuple[str, int] | None = None
    rows: list[dict[str, Any]] = []
    query = sa.select(_parts).order_by(_parts.c.conversation_id, _parts.c.seq, _parts.c.idx)
    for row in bind.execute(query).mappings():
        key = (row["conversation_id"], row["seq"])
        if key != current:
            if current is not None:
                yield current, rows
            current, rows = key, []
        rows.append(dict(row))
    if current is not None:
        yield current, rows


def _write_parts(bind: sa.Connection, updates: list[dict[str, Any]]) -> None:
    if updates:
        bind.execute(
            sa.update(_messages)
            .where(_messages.c.conversation_id == sa.bindparam("b_cid"))
            .where(_messages.c.seq == sa.bindparam("b_seq"))
            .values(parts=sa.bindparam("parts")),
            updates,
        )


def _part_json(row: dict[str, Any], children: list[dict[str, Any]], call: Any) -> dict[str, Any]:
    data = row["data"] or {}
    match row["kind"]:
        case "text":
            return _content_json(row)
        case "file":
            return _content_json(row)
        case "thinking":
            part: dict[str, Any] = {"kind": "thinking", "text": row["text"] or ""}
            part.update({k: data[k] for k in _THINKING_FIELDS if data.get(k) is not None})
            return part
        case "tool_call":
            part = {"kind": "tool_call", "id": row["call_id"]}
            if call is not None:
                part["name"] = call.name
                part["arguments"] = call.arguments
                for key, value in (
                    ("raw_arguments", call.raw_arguments),
                    ("provider_id", call.provider_id),
                    ("provider_details", call.details),
                ):
                    if value is not None:
                        part[key] = value
            return part
        case "tool_result":
            output: dict[str, Any]
            match row["result_kind"]:
                case "json":
                    output = {"kind": "json", "value": data.get("value")}
                case "error":
                    output = {"kind": "error", "message": row["text"] or ""}
                    if data.get("details") is not None:
                        output["details"] = data["details"]
                case _:
                    output = {"kind": "content", "parts": [_content_json(c) for c in children]}
            part = {"kind": "tool_result", "call_id": row["call_id"], "output": output}
            if data.get("name") is not None:
                part["name"] = data["name"]
            if data.get("synthetic"):
                part["synthetic"] = True
            return part
    raise ValueError(f"unknown v1 part kind {row['kind']!r}")


def _content_json(row: dict[str, Any]) -> dict[str, Any]:
    data = row["data"] or {}
    if row["kind"] == "text":
        part: dict[str, Any] = {"kind": "text", "text": row["text"] or ""}
        if data.get("provider_details") is not None:
            part["provider_details"] = data["provider_details"]
        return part
    part = {"kind": "file", "media_type": row["media_type"]}
    if data.get("filename") is not None:
        part["filename"] = data["filename"]
    if data.get("uri") is not None:
        part["uri"] = data["uri"]
    if row["blob_sha256"] is not None:
        part["attachment"] = {"sha256": row["blob_sha256"], "size": data.get("size", 0)}
    return part


# ---------------------------------------------------------------------------------------------
# downgrade


def downgrade() -> None:
    bind = op.get_bind()
    _renumber_compactions(bind)
    if bind.dialect.name == "sqlite":
        with op.batch_alter_table("compactions", recreate="always") as batch:
            batch.drop_constraint("pk_compactions", type_="primary")
            batch.create_primary_key("pk_compactions", ["id"])
    else:
        op.drop_constraint("pk_compactions", "compactions", type_="primary")
        op.create_primary_key("pk_compactions", "compactions", ["id"])
        op.execute("CREATE SEQUENCE compactions_id_seq OWNED BY compactions.id")
        op.execute(
            "SELECT setval('compactions_id_seq', coalesce((SELECT max(id) FROM compactions), 0) "
            "+ 1, false)"
        )
        op.alter_column(
            "compactions", "id", server_default=sa.text("nextval('compactions_id_seq'::regclass)")
        )
    op.create_index(
        op.f("ix_compactions_conversation_id_id"), "compactions", ["conversation_id", "id"]
    )

    op.drop_index("ix_tool_calls_pending", table_name="tool_calls")
    op.drop_column("tool_calls", "cancelled_at")
    op.create_index(
        op.f("ix_tool_calls_conversation_id_status"), "tool_calls", ["conversation_id", "status"]
    )

    op.create_table(
        "parts",
        sa.Column("conversation_id", sa.String(length=64), nullable=False),
        sa.Column("seq", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("idx", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("parent_idx", sa.Integer(), nullable=True),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("text", sa.Text(), nullable=True),
        sa.Column("call_id", sa.String(length=255), nullable=True),
        sa.Column("result_kind", sa.String(length=16), nullable=True),
        sa.Column("media_type", sa.String(length=255), nullable=True),
        sa.Column("blob_sha256", sa.String(length=64), nullable=True),
        sa.Column("data", sa.JSON(), nullable=True),
        sa.ForeignKeyConstraint(
            ["blob_sha256"],
            ["attachments.sha256"],
            name=op.f("fk_parts_blob_sha256_attachments"),
        ),
        sa.ForeignKeyConstraint(
            ["conversation_id", "seq"],
            ["messages.conversation_id", "messages.seq"],
            name=op.f("fk_parts_conversation_id_seq_messages"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("conversation_id", "seq", "idx", name=op.f("pk_parts")),
    )
    op.create_index(op.f("ix_parts_blob_sha256"), "parts", ["blob_sha256"])
    _unfold_parts(bind)
    op.drop_table("blob_tombstones")
    op.drop_index(op.f("ix_blob_refs_sha256"), table_name="blob_refs")
    op.drop_table("blob_refs")

    op.drop_index("ix_messages_message_id", table_name="messages")
    op.drop_index(op.f("ix_messages_conversation_id_message_id"), table_name="messages")
    for column in ("usage", "native", "parts", "message_id", "parent_seq"):
        op.drop_column("messages", column)
    for column in ("branched", "revision", "head_seq", "state"):
        op.drop_column("conversations", column)
    op.drop_index(op.f("ix_conversations_tenant_created_at"), table_name="conversations")
    op.create_index(
        op.f("ix_conversations_tenant_updated_at"), "conversations", ["tenant", "updated_at"]
    )


def _renumber_compactions(bind: sa.Connection) -> None:
    """v1 keys compactions by a global id: renumber only if per-conversation ids collide."""
    total, distinct = bind.execute(
        sa.select(sa.func.count(), sa.func.count(sa.distinct(_compactions.c.id)))
    ).one()
    if total == distinct:
        return
    rows = bind.execute(
        sa.select(_compactions.c.conversation_id, _compactions.c.id).order_by(
            _compactions.c.id, _compactions.c.conversation_id
        )
    ).all()
    offset = max(r.id for r in rows) + 1
    # Two passes through ids no row holds, so no intermediate state collides.
    for final, (cid, old) in enumerate(rows, start=1):
        bind.execute(
            sa.update(_compactions)
            .where(_compactions.c.conversation_id == cid)
            .where(_compactions.c.id == old)
            .values(id=offset + final)
        )
    bind.execute(sa.update(_compactions).values(id=_compactions.c.id - offset))


def _unfold_parts(bind: sa.Connection) -> None:
    """Write the v1 part rows of every message from its ``parts`` JSON array."""
    batch: list[dict[str, Any]] = []
    query = sa.select(_messages.c.conversation_id, _messages.c.seq, _messages.c.parts)
    for cid, seq, parts in bind.execute(query):
        rows: list[dict[str, Any]] = []
        next_child = len(parts)
        for idx, part in enumerate(parts):
            rows.append(_part_row(cid, seq, idx, None, part))
            output = part.get("output") or {}
            if part["kind"] == "tool_result" and output.get("kind") == "content":
                for child in output.get("parts", []):
                    rows.append(_part_row(cid, seq, next_child, idx, child))
                    next_child += 1
        batch.extend(rows)
        if len(batch) >= _BATCH:
            bind.execute(sa.insert(_parts), batch)
            batch = []
    if batch:
        bind.execute(sa.insert(_parts), batch)


def _part_row(
    cid: str, seq: int, idx: int, parent: int | None, part: dict[str, Any]
) -> dict[str, Any]:
    row: dict[str, Any] = dict.fromkeys(
        ("text", "call_id", "result_kind", "media_type", "blob_sha256", "data")
    )
    row.update(conversation_id=cid, seq=seq, idx=idx, parent_idx=parent, kind=part["kind"])
    match part["kind"]:
        case "text":
            row["text"] = part.get("text", "")
            if part.get("provider_details"):
                row["data"] = {"provider_details": part["provider_details"]}
        case "thinking":
            row["text"] = part.get("text", "")
            data = {k: part[k] for k in _THINKING_FIELDS if part.get(k) is not None}
            row["data"] = data or None
        case "tool_call":
            row["call_id"] = part["id"]
        case "tool_result":
            output = part["output"]
            row["call_id"] = part["call_id"]
            row["result_kind"] = output["kind"]
            data = {}
            if part.get("name") is not None:
                data["name"] = part["name"]
            if part.get("synthetic"):
                data["synthetic"] = True
            if output["kind"] == "json":
                data["value"] = output.get("value")
            elif output["kind"] == "error":
                row["text"] = output.get("message", "")
                if output.get("details") is not None:
                    data["details"] = output["details"]
            row["data"] = data or None
        case "file":
            row["media_type"] = part.get("media_type", "application/octet-stream")
            data = {}
            if part.get("filename") is not None:
                data["filename"] = part["filename"]
            if part.get("uri") is not None:
                data["uri"] = part["uri"]
            attachment = part.get("attachment")
            if attachment is not None:
                row["blob_sha256"] = attachment["sha256"]
                data["size"] = attachment["size"]
            row["data"] = data or None
    return row

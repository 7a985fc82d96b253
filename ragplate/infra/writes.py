"""The assistant's write proposals and their audit trail in PostgreSQL (tables
``write_proposals`` and ``assistant_write_audit``)."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ragplate.catalog.schema import (
    assistant_write_audit,
    conversations,
    messages,
    users,
    write_proposals,
)


def insert_proposal(conn: Connection, row: Mapping[str, Any]) -> None:
    """Store one proposal (``row`` holds every column but the decision's)."""
    conn.execute(write_proposals.insert().values(**row))


def read_proposal(conn: Connection, proposal_id: uuid.UUID, *, user_id: int,
                  lock: bool = False) -> dict[str, Any] | None:
    """The proposal ``proposal_id`` of ``user_id`` in a conversation still theirs, with the
    acting person's name; ``None`` for anyone else's (or none). ``lock`` holds its row
    until the transaction ends."""
    query = (sa.select(write_proposals, users.c.name.label("acting_user_name"))
             .join(conversations, conversations.c.id == write_proposals.c.conversation_id)
             .join(users, users.c.id == write_proposals.c.user_id)
             .where(write_proposals.c.id == proposal_id,
                    write_proposals.c.user_id == user_id,
                    conversations.c.user_id == user_id))
    if lock:
        query = query.with_for_update(of=write_proposals)
    row = conn.execute(query).mappings().first()
    return dict(row) if row is not None else None


def decide_proposal(conn: Connection, proposal_id: uuid.UUID, *, status: str,
                    outcome: Mapping[str, Any], resolved_at: datetime,
                    idempotency_key: str | None) -> None:
    """Record the decision of a (locked) proposal."""
    conn.execute(write_proposals.update().where(write_proposals.c.id == proposal_id).values(
        status=status, outcome=dict(outcome), resolved_at=resolved_at,
        idempotency_key=idempotency_key))


def update_message_write(conn: Connection, message_id: uuid.UUID, proposal_id: str,
                         changes: Mapping[str, Any]) -> None:
    """Update one entry of a message's ``metadata.writes`` (the message row is locked, so
    two proposals of one message decided at once both land)."""
    row = conn.execute(sa.select(messages.c.metadata).where(messages.c.id == message_id)
                       .with_for_update()).first()
    if row is None:
        return
    metadata = dict(row.metadata or {})
    writes = [dict(w) for w in metadata.get("writes", [])]
    for entry in writes:
        if entry.get("id") == proposal_id:
            entry.update(changes)
    metadata["writes"] = writes
    conn.execute(messages.update().where(messages.c.id == message_id)
                 .values(metadata=metadata))


def insert_audit(conn: Connection, row: Mapping[str, Any]) -> None:
    """Append one event to the audit trail."""
    conn.execute(assistant_write_audit.insert().values(**row))


def list_audit(conn: Connection, *, since: datetime | None, limit: int) -> list[dict[str, Any]]:
    """The audit events from ``since`` on (every one: ``None``), oldest first, at most
    ``limit`` (the newest ``limit``)."""
    query = sa.select(assistant_write_audit).order_by(assistant_write_audit.c.id.desc()
                                                      ).limit(limit)
    if since is not None:
        query = query.where(assistant_write_audit.c.at >= since)
    rows = [dict(r) for r in conn.execute(query).mappings()]
    return list(reversed(rows))

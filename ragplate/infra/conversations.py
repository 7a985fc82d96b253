"""Conversations and messages in PostgreSQL (tables ``conversations`` and ``messages``).

Every read and delete names the owner: a conversation of someone else reads as absent.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import sqlalchemy as sa

from ragplate.catalog.schema import conversations, messages, write_proposals
from ragplate.catalog.text import map_strings


@dataclass(frozen=True)
class StoredMessage:
    """One message as stored."""

    id: uuid.UUID
    conversation_id: uuid.UUID
    role: str
    text: str
    status: str | None
    refusal_category: str | None
    citations: list[dict[str, Any]]
    metadata: dict[str, Any]
    created_at: datetime

    def as_dict(self) -> dict[str, Any]:
        """The public shape of a message."""
        return {"id": str(self.id), "role": self.role, "text": self.text,
                "status": self.status, "refusal_category": self.refusal_category,
                "citations": self.citations, "metadata": self.metadata,
                "created_at": self.created_at.isoformat()}


@dataclass(frozen=True)
class Conversation:
    """A conversation, with its messages when they were read."""

    id: uuid.UUID
    title: str | None
    created_at: datetime
    messages: list[StoredMessage] = field(default_factory=list)

    def as_dict(self, *, with_messages: bool = True) -> dict[str, Any]:
        """The public shape of a conversation."""
        body: dict[str, Any] = {"id": str(self.id), "title": self.title,
                                "created_at": self.created_at.isoformat()}
        if with_messages:
            body["messages"] = [m.as_dict() for m in self.messages]
        return body


def _message(row: Any) -> StoredMessage:
    return StoredMessage(row.id, row.conversation_id, row.role, row.text, row.status,
                         row.refusal_category, list(row.citations), dict(row.metadata),
                         row.created_at)


def insert_conversation(conn: sa.Connection, *, user_id: int, title: str | None) -> Conversation:
    """A new conversation of ``user_id``."""
    row = conn.execute(conversations.insert().values(user_id=user_id, title=title)
                       .returning(*conversations.c)).one()
    return Conversation(row.id, row.title, row.created_at)


def owned_conversation(conn: sa.Connection, *, user_id: int, conversation_id: uuid.UUID,
                       with_messages: bool = False, for_update: bool = False
                       ) -> Conversation | None:
    """The conversation if it exists and belongs to ``user_id``; else ``None``."""
    query = sa.select(conversations).where(conversations.c.id == conversation_id,
                                           conversations.c.user_id == user_id)
    if for_update:
        query = query.with_for_update()
    row = conn.execute(query).one_or_none()
    if row is None:
        return None
    found = [] if not with_messages else [_message(m) for m in conn.execute(
        sa.select(messages).where(messages.c.conversation_id == row.id)
        .order_by(messages.c.created_at, messages.c.role.desc()))]
    return Conversation(row.id, row.title, row.created_at, found)


def list_conversations(conn: sa.Connection, *, user_id: int, limit: int = 100
                       ) -> list[Conversation]:
    """The newest conversations of ``user_id``, without their messages."""
    rows = conn.execute(sa.select(conversations).where(conversations.c.user_id == user_id)
                        .order_by(conversations.c.created_at.desc()).limit(limit))
    return [Conversation(r.id, r.title, r.created_at) for r in rows]


@dataclass(frozen=True)
class DeletedConversation:
    """What a delete removed beside the conversation and its messages."""

    proposals: int
    #: Of them, those nobody had decided (they can no longer be).
    undecided: int


def delete_conversation(conn: sa.Connection, *, user_id: int, conversation_id: uuid.UUID
                        ) -> DeletedConversation | None:
    """Delete the conversation if it belongs to ``user_id`` (``None`` otherwise). Its
    messages and the write proposals made in it go with it (their foreign keys cascade);
    the audit trail of those writes stays (it has no foreign key).

    Locks are taken in the order every other writer takes them, so nothing deadlocks: the
    conversation row first (a turn storing its answer holds it until it commits, and one
    that stores after the delete finds no conversation), then its proposals in id order (a
    confirm holds its proposal, then takes the message row the cascade would take first),
    and only then the cascading delete."""
    owned = conn.execute(sa.select(conversations.c.id).where(
        conversations.c.id == conversation_id, conversations.c.user_id == user_id)
        .with_for_update()).first()
    if owned is None:
        return None
    statuses = conn.execute(
        sa.select(write_proposals.c.status)
        .where(write_proposals.c.conversation_id == conversation_id)
        .order_by(write_proposals.c.id).with_for_update()).scalars().all()
    conn.execute(conversations.delete().where(conversations.c.id == conversation_id))
    return DeletedConversation(proposals=len(statuses),
                               undecided=sum(s == "proposed" for s in statuses))


#: What PostgreSQL ``text`` and ``jsonb`` cannot hold: NUL, and lone surrogates.
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def storable(value: Any) -> Any:
    """``value`` (text, or JSON data) with every character PostgreSQL cannot store replaced
    by U+FFFD, in keys and strings alike: what is stored is checked where it enters, and
    this keeps a character that slipped past a check from failing the whole write."""
    return map_strings(value, lambda text: _UNSTORABLE.sub("\ufffd", text))


def insert_message(conn: sa.Connection, *, conversation_id: uuid.UUID, role: str, text: str,
                   status: str | None = None, refusal_category: str | None = None,
                   citations: list[dict[str, Any]] | None = None,
                   metadata: dict[str, Any] | None = None) -> StoredMessage:
    """Append a message to a conversation."""
    # Checked where it entered; a character PostgreSQL cannot hold that a model's answer
    # or a tool's data still carried must not lose the person's question with the answer.
    row = conn.execute(messages.insert().values(
        conversation_id=conversation_id, role=role, text=storable(text), status=status,
        refusal_category=refusal_category, citations=storable(citations or []),
        metadata=storable(metadata or {})).returning(*messages.c)).one()
    return _message(row)

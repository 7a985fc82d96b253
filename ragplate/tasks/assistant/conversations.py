"""A person's conversations: started, listed, read and deleted by their owner only (anyone
else's reads as absent, a 404)."""

from __future__ import annotations

import logging
import uuid

from sqlalchemy.engine import Engine

from ragplate.catalog.errors import NotFoundError
from ragplate.catalog.people import Person
from ragplate.infra import conversations as store
from ragplate.infra.conversations import Conversation
from ragplate.tasks.writes.audit import AUDIT_LOGGER

#: A deletion is logged beside the write audit lines: the proposals it withdrew leave
#: only their ``proposed`` event in the trail, and this line says where they went.
logger = logging.getLogger(AUDIT_LOGGER)

MAX_TITLE_CHARS = 200


def start(engine: Engine, *, person: Person, title: str | None = None) -> Conversation:
    """A new conversation of ``person``."""
    if title is not None:
        title = " ".join(title.split())[:MAX_TITLE_CHARS] or None
    with engine.begin() as conn:
        return store.insert_conversation(conn, user_id=person.id, title=title)


def read(engine: Engine, *, person: Person, conversation_id: uuid.UUID) -> Conversation:
    """``person``'s conversation with its messages; :class:`NotFoundError` otherwise."""
    with engine.connect() as conn:
        found = store.owned_conversation(conn, user_id=person.id,
                                         conversation_id=conversation_id, with_messages=True)
    if found is None:
        raise NotFoundError("no such conversation")
    return found


def list_for(engine: Engine, *, person: Person) -> list[Conversation]:
    """``person``'s newest conversations."""
    with engine.connect() as conn:
        return store.list_conversations(conn, user_id=person.id)


def delete(engine: Engine, *, person: Person, conversation_id: uuid.UUID) -> None:
    """Delete ``person``'s conversation with its messages and the write proposals made in
    it (one not yet confirmed can no longer be); the audit trail of those writes is kept,
    and a write already confirmed stays as it was decided. :class:`NotFoundError` for
    anyone else's (or none)."""
    with engine.begin() as conn:
        deleted = store.delete_conversation(conn, user_id=person.id,
                                            conversation_id=conversation_id)
    if deleted is None:
        raise NotFoundError("no such conversation")
    logger.info("Conversation deleted: actor=%s impersonated_by=%s conversation=%s "
                "proposals=%s undecided=%s", person.id, person.impersonated_by,
                conversation_id, deleted.proposals, deleted.undecided)

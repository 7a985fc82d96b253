"""Messages in the SQL of :mod:`ragplate.infra.conversations`: what PostgreSQL cannot hold
is stored as U+FFFD rather than failing the turn (and losing the person's question)."""

from __future__ import annotations

import uuid

import pytest
import sqlalchemy as sa

from ragplate.infra import conversations, people

pytestmark = pytest.mark.integration


def test_storable_replaces_what_postgresql_cannot_hold_in_keys_and_values() -> None:
    assert conversations.storable("a\x00b\ud800") == "a\ufffdb\ufffd"
    assert conversations.storable({"k\x00": ("x", 1.5, True, None, {"y": "\udc00"})}) == {
        "k\ufffd": ["x", 1.5, True, None, {"y": "\ufffd"}]}
    assert conversations.storable("plain text") == "plain text"


def test_a_message_holding_nul_and_a_lone_surrogate_is_stored(conn: sa.Connection) -> None:
    person = people.insert_person(conn, name=f"conv-{uuid.uuid4().hex[:8]}", tenant=None,
                                  locale="en", permissions=frozenset(), is_guest=False)
    conversation = conversations.insert_conversation(conn, user_id=person.id, title=None)

    stored = conversations.insert_message(
        conn, conversation_id=conversation.id, role="assistant", text="a\x00b\ud800",
        status="answered", citations=[{"excerpt": "c\x00"}],
        metadata={"proposals": [{"proposed": "v\x00"}]})

    assert stored.text == "a\ufffdb\ufffd"
    assert stored.citations == [{"excerpt": "c\ufffd"}]
    assert stored.metadata == {"proposals": [{"proposed": "v\ufffd"}]}

"""respond() with the developer_help profile: the developer index, no access filter, code
allowed in the answer but never a secret; a guest-free path the help CLI will call."""

from __future__ import annotations

import uuid

import pytest
import sqlalchemy as sa

from ragplate.catalog.settings import Settings
from ragplate.infra.runtime import Runtime
from ragplate.infra.stores.base import DocumentStore
from ragplate.tasks.assistant import conversations
from ragplate.tasks.assistant.respond import respond
from ragplate.tasks.people.accounts import create_person

pytestmark = pytest.mark.integration


def test_developer_help_answers_from_the_developer_index(
    settings: Settings, engine: sa.Engine, developer_index: DocumentStore
) -> None:
    runtime = Runtime(settings)
    person = create_person(engine, name=f"dev-{uuid.uuid4().hex[:8]}",
                           permissions=["docs.developer"])
    conversation = conversations.start(engine, person=person)

    message = respond(runtime, person=person, conversation_id=conversation.id,
                      text_in="How are unchanged sources skipped when indexing?",
                      profile="developer_help")

    assert message.status == "answered", message
    assert message.metadata["profile"] == "developer_help"
    assert message.citations[0]["source_label"] == "dev/guide/indexing.md"
    assert "content hash" in message.text

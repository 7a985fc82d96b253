"""Writes through the assistant in tests: a runtime whose settings opt the data tools in,
and one message through respond() with the scripted chat double calling tools."""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

import sqlalchemy as sa

from ragplate.catalog.people import Person
from ragplate.catalog.settings import ServerSettings, Settings
from ragplate.infra.conversations import StoredMessage
from ragplate.infra.models.chat import OpenAIChatClient
from ragplate.infra.runtime import Runtime
from ragplate.tasks.assistant import conversations
from ragplate.tasks.assistant.respond import respond
from tests.testing.chat_double import ChatDouble, Step, Text, ToolCalls

#: The opt-in the tests run under: tickets fully, contents written without approvals.
OPTED_IN: dict[str, list[str]] = {
    "sao.tickets": ["read", "create", "update", "delete"],
    "cms.contents": ["read", "create", "update", "delete"],
}
TICKET_MEMBER = ("sao.tickets.read", "sao.tickets.create", "sao.tickets.update",
                 "sao.tickets.delete")
TICKET_APPROVER = (*TICKET_MEMBER, "sao.tickets.approve")


def writes_settings(settings: Settings, *, chat_url: str | None = None,
                    **overrides: Any) -> Settings:
    """``settings`` opting the data tools in, with the chat model at ``chat_url`` (a
    :class:`ChatDouble`) when given."""
    update: dict[str, Any] = {"tools_crud_entities": OPTED_IN,
                              "tools_crud_unmoderated_writes": ["cms.contents"], **overrides}
    if chat_url is not None:
        update["servers"] = {**settings.servers,
                             "chat": ServerSettings(url=chat_url, model="m", timeout=10.0)}
    return settings.model_copy(update=update)


def writes_runtime(settings: Settings, **overrides: Any) -> Runtime:
    """A runtime on the session's database whose settings opt the data tools in."""
    return Runtime(writes_settings(settings, **overrides))


def answer(text: str = "I prepared the change for you to review.") -> Text:
    """The model's final structured answer of a turn that used tools."""
    return Text(json.dumps({"answer": text, "supported": True, "citations": []}))


def calls(*pairs: tuple[str, Mapping[str, Any]]) -> ToolCalls:
    """One model reply calling each ``(tool, arguments)``."""
    return ToolCalls.of(*((name, dict(arguments)) for name, arguments in pairs))


def converse(runtime: Runtime, person: Person, script: Sequence[Step], *,
             question: str = "Please close ticket 1.",
             conversation_id: uuid.UUID | None = None
             ) -> tuple[StoredMessage, list[dict[str, Any]]]:
    """One message of ``person`` answered by the chat double; the stored assistant message
    and the request bodies the double received."""
    with ChatDouble(script) as double:
        client = OpenAIChatClient(url=double.url, model="m", timeout=10.0)
        if conversation_id is None:
            conversation_id = conversations.start(runtime.engine, person=person,
                                                  title="Writes").id
        try:
            stored = respond(runtime, person=person, conversation_id=conversation_id,
                             text_in=question, context=None, profile="in_app", chat=client)
        finally:
            client.close()
        assert not double.exhausted, "respond() asked the model more often than scripted"
        return stored, double.bodies()


def audit_rows(engine: sa.Engine, conversation_id: uuid.UUID) -> list[dict[str, Any]]:
    """The audit rows of one conversation, oldest first."""
    with engine.connect() as conn:
        return [dict(r) for r in conn.execute(sa.text(
            "SELECT * FROM assistant_write_audit WHERE conversation_id = :c ORDER BY id"),
            {"c": conversation_id}).mappings()]

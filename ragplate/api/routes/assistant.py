"""``/app/ai/…``: the assistant's conversations, messages and capabilities.

Every route needs a bearer token of a person who is not a guest; a conversation is its
owner's only (anyone else gets a 404), and its owner may delete it. A message goes
through respond() (see :mod:`ragplate.tasks.assistant.respond`) and its answer is returned
whole, validated.
"""

from __future__ import annotations

import uuid
from typing import Any, Literal

from fastapi import APIRouter, Response, status
from pydantic import BaseModel, Field, field_validator

from ragplate.api.deps import KnownQuery, MemberDep, RuntimeDep
from ragplate.api.errors import AUTH_RESPONSES, ERROR_RESPONSES, ErrorBody
from ragplate.api.fields import LabelText, NameText, SearchText, StrictRequest
from ragplate.api.stream_slots import StreamSlotsDep
from ragplate.catalog.assistant import compile_policy
from ragplate.catalog.errors import BusyError
from ragplate.infra.models.chat import CHAT, chat_client_from_settings
from ragplate.tasks.assistant import conversations
from ragplate.tasks.assistant.respond import respond
from ragplate.tasks.assistant.ui_proposals import declaration_problem
from ragplate.tasks.writes.offered import offered_for

router = APIRouter(prefix="/app/ai", tags=["assistant"])
RESPONSES: dict[int | str, dict[str, Any]] = {
    **AUTH_RESPONSES, **ERROR_RESPONSES,
    404: {"model": ErrorBody, "description": "No such conversation of this person."}}


class NewConversation(StrictRequest):
    """A conversation to start; the title is optional."""

    title: LabelText | None = None


class ConversationOut(BaseModel):
    """A conversation."""

    id: str
    title: str | None


class Citation(BaseModel):
    """One cited source of an answer."""

    source_label: str
    excerpt: str
    score: float = Field(description="The source's similarity with the question.")


class MessageOut(BaseModel):
    """A stored message: the person's (``user``) or the validated answer (``assistant``)."""

    id: str
    role: Literal["user", "assistant"]
    text: str
    status: Literal["answered", "abstained", "refused", "clarification"] | None
    refusal_category: str | None
    citations: list[Citation]
    metadata: dict[str, Any]


class ConversationWithMessages(ConversationOut):
    """A conversation with its messages, oldest first."""

    messages: list[MessageOut]


class PageContext(StrictRequest):
    """The page the person is on: ``resource`` is ``{module}/{entity}``."""

    resource: LabelText | None = None
    record_key: LabelText | None = None
    proposable: list[dict[str, Any]] | None = Field(
        default=None, max_length=30,
        description="What the page is willing to have proposed: entries of kind "
        "'preference' (target: namespace, key) or 'view_state' (target: resource, view), "
        "each with a JSON Schema subset, the current value and a description. An entry "
        "of a wrong shape is refused (422, naming it); one breaking a bound (the sizes of "
        "schema, current and description) is dropped; nothing proposed is ever applied by "
        "the server.")

    @field_validator("proposable")
    @classmethod
    def _shaped(cls, entries: list[dict[str, Any]] | None) -> list[dict[str, Any]] | None:
        for number, entry in enumerate(entries or []):
            problem = declaration_problem(entry)
            if problem is not None:
                raise ValueError(f"entry {number}: {problem}")
        return entries


class MessageContext(StrictRequest):
    """Where the person is in the application; only a module the index holds narrows the
    answer's sources, and nothing here widens what the person may see."""

    module: NameText | None = None
    page: PageContext | None = None


class NewMessage(StrictRequest):
    """A message to the assistant."""

    # Long texts are the guardrails' to refuse (category length), with a stored refusal.
    text: SearchText = Field(min_length=1, max_length=100_000)
    context: MessageContext | None = None


class Features(BaseModel):
    """What the assistant can do for this person now."""

    writes: bool = Field(description="It may propose writes of application data (a chat "
                         "model is configured and a write is offered to this person).")
    proposals: bool = Field(description="It may propose a preference or view the page "
                            "declares in context.page.proposable.")
    streaming: bool = Field(description="POST /app/ai/agent streams answers.")


class Action(BaseModel):
    """An entity and operation the assistant may use for this person."""

    entity: str = Field(description="module.entity, e.g. sao.tickets.")
    operation: Literal["read", "create", "update", "delete"]
    kind: Literal["read", "write"]
    requires_approval: bool = Field(description="A confirmed write waits for an approver.")


class Capabilities(BaseModel):
    """What the assistant offers this person."""

    profile: str
    configured: bool = Field(description="A chat model is configured (without one the "
                             "assistant answers extractively and offers no tool).")
    capabilities: list[str] = Field(description="The capabilities the profile is granted.")
    features: Features
    actions: list[Action]
    locale: str
    policy_version: str
    max_message_chars: int = Field(description="The longest message the assistant reads "
                                   "(RAGPLATE_GUARDRAILS_INPUT_MAX_CHARS); a longer one is "
                                   "refused with the category length.")


#: What a message's metadata shows its reader; the rest (the rule that refused, the
#: resolved scope, how much evidence was withheld) stays in the database: it would teach a
#: prober which rule to word around and which modules exist.
PUBLIC_METADATA = ("profile", "policy_version", "answerer", "sentences", "latency_ms",
                   "degraded_reason", "writes", "proposals")


def message_out(stored: Any) -> MessageOut:
    """The public shape of a stored message (its metadata cut to :data:`PUBLIC_METADATA`)."""
    body = stored.as_dict()
    body.pop("created_at", None)
    body["metadata"] = {k: v for k, v in body["metadata"].items() if k in PUBLIC_METADATA}
    return MessageOut.model_validate(body)


@router.post("/conversations", status_code=status.HTTP_201_CREATED,
             response_model=ConversationOut, responses=RESPONSES)
def create_conversation(body: NewConversation, runtime: RuntimeDep, person: MemberDep
                        ) -> ConversationOut:
    """Start a conversation."""
    started = conversations.start(runtime.engine, person=person, title=body.title)
    return ConversationOut(id=str(started.id), title=started.title)


@router.get("/conversations", response_model=list[ConversationOut], responses=RESPONSES)
def list_conversations(runtime: RuntimeDep, person: MemberDep) -> list[ConversationOut]:
    """The person's newest conversations (at most 100)."""
    return [ConversationOut(id=str(c.id), title=c.title)
            for c in conversations.list_for(runtime.engine, person=person)]


@router.get("/conversations/{conversation_id}", response_model=ConversationWithMessages,
            responses=RESPONSES)
def get_conversation(conversation_id: uuid.UUID, runtime: RuntimeDep, person: MemberDep
                     ) -> ConversationWithMessages:
    """A conversation with its messages."""
    found = conversations.read(runtime.engine, person=person, conversation_id=conversation_id)
    return ConversationWithMessages(id=str(found.id), title=found.title,
                                    messages=[message_out(m) for m in found.messages])


@router.delete("/conversations/{conversation_id}", status_code=status.HTTP_204_NO_CONTENT,
               response_class=Response, responses={
                   **RESPONSES, 409: {"model": ErrorBody, "description": "An answer in "
                                      "this conversation is still being prepared for a "
                                      "stream (POST /app/ai/agent); delete it once the "
                                      "answer has arrived."}})
def delete_conversation(conversation_id: uuid.UUID, runtime: RuntimeDep, person: MemberDep,
                        _query: KnownQuery, slots: StreamSlotsDep) -> Response:
    """Delete a conversation with its messages and the write proposals made in it (a
    proposal not yet confirmed can no longer be); the writes' audit trail is kept."""
    if slots.preparing(person.id, conversation_id):
        raise BusyError("an answer in this conversation is still being prepared; delete "
                        "the conversation once it has arrived")
    conversations.delete(runtime.engine, person=person, conversation_id=conversation_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.post("/conversations/{conversation_id}/messages", response_model=MessageOut,
             responses=RESPONSES)
def send_message(conversation_id: uuid.UUID, body: NewMessage, runtime: RuntimeDep,
                 person: MemberDep) -> MessageOut:
    """Send a message; the answer comes back whole, after the output policy: ``answered``
    with sentence-level citations, ``abstained`` when the person's documentation holds no
    evidence, or ``refused`` with its category."""
    context = body.context.model_dump(exclude_none=True) if body.context else None
    chat = chat_client_from_settings(runtime.settings)
    try:
        stored = respond(runtime, person=person, conversation_id=conversation_id,
                         text_in=body.text, context=context, profile="in_app", chat=chat)
    finally:
        if chat is not None:
            chat.close()
    return message_out(stored)


@router.get("/capabilities", response_model=Capabilities, responses=RESPONSES)
def capabilities(runtime: RuntimeDep, person: MemberDep) -> Capabilities:
    """The profile, its features and the data actions the assistant may take for this
    person (decided now: a permission revoked a moment ago is gone)."""
    settings = runtime.settings
    policy = compile_policy("in_app", settings)
    chat = settings.servers.get(CHAT)
    configured = chat is not None and bool(chat.url)
    actions = offered_for(person, policy, settings) if configured else []
    return Capabilities(
        profile=policy.profile.name, configured=configured,
        capabilities=sorted(policy.profile.capabilities),
        features=Features(writes=any(a.kind == "write" for a in actions),
                          proposals=configured and policy.allows("ui_proposals"),
                          streaming=True),
        actions=[Action(**a.as_dict()) for a in actions],
        locale=person.locale, policy_version=policy.policy_version,
        max_message_chars=policy.max_input_chars)

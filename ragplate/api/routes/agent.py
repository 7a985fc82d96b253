"""``POST /app/ai/agent``: one message to the assistant, answered as Server-Sent Events.

The same respond() as ``POST /app/ai/conversations/{id}/messages`` runs in a worker thread
while its phases are sent as they start; the answer is delivered only once it is stored,
i.e. after the output policy passed the whole of it (see
:mod:`ragplate.tasks.assistant.delivery` for the events). A client that goes away stops the
delivery, not the answer: respond() finishes and stores both messages. The conversation is
checked before the stream opens, so a wrong id or token is a plain JSON error.
"""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from collections.abc import AsyncIterator
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import StreamingResponse
from pydantic import Field

from ragplate.api.deps import MemberDep, RuntimeDep
from ragplate.api.errors import public_detail
from ragplate.api.fields import SearchText, StrictRequest
from ragplate.api.routes.assistant import RESPONSES, MessageContext, message_out
from ragplate.catalog.errors import NotAcceptableError, NotFoundError, RagplateError
from ragplate.catalog.people import Person
from ragplate.infra.conversations import owned_conversation
from ragplate.infra.models.chat import chat_client_from_settings
from ragplate.infra.runtime import Runtime
from ragplate.tasks.assistant.delivery import delivery_events, response_object
from ragplate.tasks.assistant.respond import respond

router = APIRouter(prefix="/app/ai", tags=["assistant"])
logger = logging.getLogger("ragplate.api.agent")

#: A comment line: ignored by every SSE client, it keeps proxies from closing the stream.
KEEPALIVE = ": keep-alive\n\n"
EVENT_STREAM = "text/event-stream"

STREAM_DESCRIPTION = """Server-Sent Events; every `data` is JSON with `type` (the event's
name) and `sequence_number`. In order: `response.created`; `response.in_progress` with
`phase` `validating_input`, `retrieving`, `generating`, `validating_output`; for an answer
or an abstention `response.output_text.delta` (`delta`: a few words of the validated text),
then `response.output_text.annotation.added` per citation (`annotation`: `index`,
`source_label`, `excerpt`, `score`), then `response.output_text.done` (`text`); for a
refusal only `response.refusal.done` (`refusal`, `category`), never any answer text;
finally `response.completed` (`response.message`: the stored message) — or
`response.failed` (`response.error`: `code`, `message`). Lines starting with `:` are
keep-alives."""


class AgentRequest(StrictRequest):
    """A message to the assistant, answered as a stream."""

    conversation_id: uuid.UUID = Field(strict=False, description="A conversation of the "
                                       "person's (POST /app/ai/conversations).")
    # Long texts are the guardrails' to refuse (category length), with a stored refusal.
    text: SearchText = Field(min_length=1, max_length=100_000)
    context: MessageContext | None = None


def _accepts_stream(accept: str | None) -> bool:
    if not accept:
        return True
    kinds = {part.split(";")[0].strip().lower() for part in accept.split(",")}
    return bool(kinds & {EVENT_STREAM, "text/*", "*/*"})


def _frame(kind: str, sequence: int, data: dict[str, Any]) -> str:
    body = json.dumps({"type": kind, "sequence_number": sequence, **data},
                      ensure_ascii=False, separators=(",", ":"))
    return f"event: {kind}\ndata: {body}\n\n"


def _answer(runtime: Runtime, person: Person, body: AgentRequest, context: Any,
            on_phase: Any) -> dict[str, Any]:
    """respond() with the configured chat model, in the worker thread."""
    chat = chat_client_from_settings(runtime.settings)
    try:
        stored = respond(runtime, person=person, conversation_id=body.conversation_id,
                         text_in=body.text, context=context, profile="in_app", chat=chat,
                         on_phase=on_phase)
    finally:
        if chat is not None:
            chat.close()
    return message_out(stored).model_dump()


def _failure(exc: BaseException) -> dict[str, str]:
    if isinstance(exc, RagplateError):
        return {"code": exc.__class__.__name__, "message": public_detail(exc)}
    logger.error("streamed answer failed: %s", exc.__class__.__name__)
    return {"code": "ServerError", "message": "the answer could not be produced"}


async def _events(runtime: Runtime, person: Person, body: AgentRequest
                  ) -> AsyncIterator[str]:
    settings = runtime.settings
    loop = asyncio.get_running_loop()
    phases: asyncio.Queue[str] = asyncio.Queue()
    response_id = f"resp_{uuid.uuid4().hex}"
    conversation_id = str(body.conversation_id)
    sequence = 0

    def frame(kind: str, data: dict[str, Any]) -> str:
        nonlocal sequence
        sequence += 1
        return _frame(kind, sequence - 1, data)

    def lifecycle(status: str, **extra: Any) -> dict[str, Any]:
        return {"response": response_object(response_id, conversation_id, status, **extra)}

    context = body.context.model_dump(exclude_none=True) if body.context else None
    # Not awaited directly: a client that disconnects cancels this generator, and the
    # thread's respond() must still finish and store what it answered.
    work = loop.run_in_executor(None, _answer, runtime, person, body, context,
                                lambda phase: loop.call_soon_threadsafe(phases.put_nowait,
                                                                        phase))
    yield frame("response.created", lifecycle("in_progress"))
    keepalive = settings.assistant_stream_keepalive_seconds
    while True:
        waiting: asyncio.Future[Any] = asyncio.ensure_future(phases.get())
        done, _ = await asyncio.wait({waiting, work}, timeout=keepalive,
                                     return_when=asyncio.FIRST_COMPLETED)
        if waiting in done:
            yield frame("response.in_progress", {"phase": waiting.result(),
                                                 **lifecycle("in_progress")})
            continue
        waiting.cancel()
        if work in done:
            break
        yield KEEPALIVE
    while not phases.empty():  # phases reported just before the answer was stored
        yield frame("response.in_progress", {"phase": phases.get_nowait(),
                                             **lifecycle("in_progress")})
    try:
        message = work.result()
    except Exception as exc:
        yield frame("response.failed", lifecycle("failed", error=_failure(exc)))
        return
    delay = settings.assistant_stream_delay_ms / 1000
    for kind, data in delivery_events(message):
        yield frame(kind, data)
        if kind == "response.output_text.delta" and delay:
            await asyncio.sleep(delay)
    yield frame("response.completed", lifecycle("completed", message=message))


@router.post("/agent", response_class=StreamingResponse,
             responses={**RESPONSES, 200: {"description": STREAM_DESCRIPTION,
                                           "content": {EVENT_STREAM: {"schema": {
                                               "type": "string"}}}},
                        406: {"description": "The Accept header rules out "
                              "text/event-stream."}})
def agent(body: AgentRequest, request: Request, runtime: RuntimeDep,
          person: MemberDep) -> StreamingResponse:
    """Send a message and read the validated answer as it is delivered (Server-Sent
    Events; see the 200 response for the events)."""
    if not _accepts_stream(request.headers.get("accept")):
        raise NotAcceptableError("this route answers in text/event-stream only "
                                 "(send Accept: text/event-stream)")
    with runtime.engine.connect() as conn:
        if owned_conversation(conn, user_id=person.id,
                              conversation_id=body.conversation_id) is None:
            raise NotFoundError("no such conversation")
    return StreamingResponse(_events(runtime, person, body), media_type=EVENT_STREAM,
                             headers={"Cache-Control": "no-cache",
                                      "X-Accel-Buffering": "no"})

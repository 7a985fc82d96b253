"""``POST /app/ai/agent``: one message to the assistant, answered as Server-Sent Events.

The same respond() as ``POST /app/ai/conversations/{id}/messages`` runs in a worker thread
of its own bounded pool (:mod:`ragplate.api.stream_slots`) while its phases are sent as they
start; the answer is delivered only once it is stored,
i.e. after the output policy passed the whole of it (see
:mod:`ragplate.tasks.assistant.delivery` for the events). A client that goes away stops the
delivery, not the answer: respond() finishes and stores both messages. The conversation is
checked before the stream opens, so a wrong id or token is a plain JSON error.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import StreamingResponse
from pydantic import Field

from ragplate.api.accept import accepts
from ragplate.api.deps import MemberDep, RuntimeDep
from ragplate.api.errors import ErrorBody, public_detail
from ragplate.api.fields import SearchText, StrictRequest
from ragplate.api.routes.assistant import RESPONSES, MessageContext, message_out
from ragplate.api.stream_slots import StreamSlots, StreamSlotsDep
from ragplate.catalog.errors import NotAcceptableError, NotFoundError, RagplateError
from ragplate.catalog.people import Person
from ragplate.catalog.settings import Settings
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
#: The header of a refusal that passes by itself, for the OpenAPI document.
RETRY_AFTER = {"Retry-After": {"description": "Seconds to wait before sending the request "
                               "again (on a 503 only when the stream slots are full).",
                               "schema": {"type": "integer"}}}

STREAM_DESCRIPTION = """Server-Sent Events; every `data` is JSON with `type` (the event's
name) and `sequence_number`. In order: `response.created`; `response.in_progress` with
`phase` `validating_input`, `retrieving`, `generating`, `validating_output`; for an answer,
an abstention or a clarification `response.output_text.delta` (`delta`: a few words of the
validated text), then `response.output_text.annotation.added` per citation (`annotation`: `index`,
`source_label`, `excerpt`, `score`), then `response.output_text.done` (`text`); for a
refusal only `response.refusal.done` (`refusal`, `category`), never any answer text;
finally `response.completed` (`response.message`: the stored message) — or
`response.failed` (`response.error`: `code`, `message`). Lines starting with `:` are
keep-alives, sent after RAGPLATE_ASSISTANT_STREAM_KEEPALIVE_SECONDS without an event."""


class AgentRequest(StrictRequest):
    """A message to the assistant, answered as a stream."""

    conversation_id: uuid.UUID = Field(strict=False, description="A conversation of the "
                                       "person's (POST /app/ai/conversations).")
    # Long texts are the guardrails' to refuse (category length), with a stored refusal.
    text: SearchText = Field(min_length=1, max_length=100_000)
    context: MessageContext | None = None


def _frame(kind: str, sequence: int, data: dict[str, Any]) -> str:
    body = json.dumps({"type": kind, "sequence_number": sequence, **data},
                      ensure_ascii=False, separators=(",", ":"))
    return f"event: {kind}\ndata: {body}\n\n"


def _answer(runtime: Runtime, person: Person, body: AgentRequest, context: Any,
            on_phase: Callable[[str], None]) -> dict[str, Any]:
    """respond() with the configured chat model, in a worker thread."""
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
    return {"code": "ServerError", "message": "the answer could not be produced"}


def _start(slots: StreamSlots, runtime: Runtime, person: Person, body: AgentRequest
           ) -> tuple[asyncio.Future[dict[str, Any]], asyncio.Queue[str]]:
    """Take a slot and start respond() in the stream pool; the slot is given back when the
    answer is stored (or respond() failed), whether or not anyone still reads the stream."""
    conversation_id = body.conversation_id
    slots.acquire(person.id, conversation_id)
    loop = asyncio.get_running_loop()
    phases: asyncio.Queue[str] = asyncio.Queue()

    def report(phase: str) -> None:
        # A closed loop (shutdown) must not stop respond(): the answer is still stored.
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(phases.put_nowait, phase)

    context = body.context.model_dump(exclude_none=True) if body.context else None
    try:
        work = loop.run_in_executor(slots.executor, _answer, runtime, person, body, context,
                                    report)
    except BaseException:
        slots.release(person.id, conversation_id)
        raise

    def finished(done: asyncio.Future[dict[str, Any]]) -> None:
        slots.release(person.id, conversation_id)
        # Read here so a failure nobody streams is logged by its class only (asyncio would
        # print the whole exception, which can hold the question).
        if not done.cancelled() and (exc := done.exception()) is not None:
            logger.error("streamed answer failed: %s", exc.__class__.__name__)

    work.add_done_callback(finished)
    return work, phases


async def _events(settings: Settings, conversation_id: str,
                  work: asyncio.Future[dict[str, Any]], phases: asyncio.Queue[str]
                  ) -> AsyncIterator[str]:
    response_id = f"resp_{uuid.uuid4().hex}"
    sequence = 0

    def frame(kind: str, data: dict[str, Any]) -> str:
        nonlocal sequence
        sequence += 1
        return _frame(kind, sequence - 1, data)

    def lifecycle(status: str, **extra: Any) -> dict[str, Any]:
        return {"response": response_object(response_id, conversation_id, status, **extra)}

    yield frame("response.created", lifecycle("in_progress"))
    keepalive = settings.assistant_stream_keepalive_seconds
    waiting: asyncio.Future[str] | None = None
    try:
        while True:
            # One reader of the queue at a time, kept across keep-alives: a second one would
            # take the next phase and drop it.
            if waiting is None:
                waiting = asyncio.ensure_future(phases.get())
            pending: set[asyncio.Future[Any]] = {waiting, work}
            done, _ = await asyncio.wait(pending, timeout=keepalive,
                                         return_when=asyncio.FIRST_COMPLETED)
            if waiting in done:
                phase, waiting = waiting.result(), None
                yield frame("response.in_progress", {"phase": phase,
                                                     **lifecycle("in_progress")})
                continue
            if work in done:
                break
            yield KEEPALIVE
    finally:
        # A client that left cancels this generator here; the work goes on regardless.
        if waiting is not None and not waiting.done():
            waiting.cancel()
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
                        406: {"model": ErrorBody, "description": "The Accept header "
                              "rules out text/event-stream."},
                        429: {"model": ErrorBody, "headers": RETRY_AFTER,
                              "description": "This person's streamed answers in "
                              "preparation are at RAGPLATE_ASSISTANT_STREAM_PER_PERSON."},
                        503: {"model": ErrorBody, "headers": RETRY_AFTER,
                              "description": "The process's streamed answers in "
                              "preparation are at RAGPLATE_ASSISTANT_STREAM_WORKERS, or "
                              "PostgreSQL, the store or a model is unavailable."}})
async def agent(body: AgentRequest, request: Request, runtime: RuntimeDep,
                person: MemberDep, slots: StreamSlotsDep) -> StreamingResponse:
    """Send a message and read the validated answer as it is delivered (Server-Sent
    Events; see the 200 response for the events)."""
    # Several Accept lines are one list (RFC 9110 §5.3).
    if not accepts(", ".join(request.headers.getlist("accept")), EVENT_STREAM):
        raise NotAcceptableError("this route answers in text/event-stream only "
                                 "(send Accept: text/event-stream)")

    def owned() -> bool:
        with runtime.engine.connect() as conn:
            return owned_conversation(conn, user_id=person.id,
                                      conversation_id=body.conversation_id) is not None

    if not await run_in_threadpool(owned):
        raise NotFoundError("no such conversation")
    # Started here, not in the stream: a client gone before the body starts still gets its
    # answer stored, and the slot back.
    work, phases = _start(slots, runtime, person, body)
    return StreamingResponse(_events(runtime.settings, str(body.conversation_id), work, phases),
                             media_type=EVENT_STREAM,
                             headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})

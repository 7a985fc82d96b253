"""Progressive delivery of an answer that has already passed the output policy.

The whole answer is generated and validated first (insufficient evidence, the length bound
and a violation each decide over the whole text); only then is it cut into chunks of a few
words for the reader. These functions build the events of that delivery, named as in the
OpenAI Responses streaming API so client code written for it reads them unchanged:

``response.created`` → ``response.in_progress`` (one per phase) → for an answer or an
abstention ``response.output_text.delta``… → ``response.output_text.annotation.added`` (one
per citation) → ``response.output_text.done``; for a refusal one ``response.refusal.done``
and no text at all → ``response.completed`` with the stored message. ``response.failed``
replaces everything after the phases when the message could not be answered.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

#: Words per ``response.output_text.delta``.
WORDS_PER_DELTA = 4

_WORD = re.compile(r"\S+\s*")


def text_chunks(text: str, *, words: int = WORDS_PER_DELTA) -> list[str]:
    """``text`` in chunks of ``words`` words (each with the spacing that follows it), so
    that the chunks joined are ``text`` exactly, leading whitespace and newlines included."""
    if not text:
        return []
    lead = len(text) - len(text.lstrip())
    pieces = _WORD.findall(text, lead)
    chunks = ["".join(pieces[i:i + words]) for i in range(0, len(pieces), words)]
    if lead:
        chunks = [text[:lead] + chunks[0], *chunks[1:]] if chunks else [text]
    return chunks


def response_object(response_id: str, conversation_id: str, status: str,
                    **extra: Any) -> dict[str, Any]:
    """The ``response`` object the lifecycle events carry."""
    return {"id": response_id, "object": "response", "conversation_id": conversation_id,
            "status": status, **extra}


def delivery_events(message: dict[str, Any], *, words: int = WORDS_PER_DELTA
                    ) -> Iterator[tuple[str, dict[str, Any]]]:
    """The events that deliver a stored assistant ``message`` (its public shape), before
    ``response.completed``: the text in chunks and its citations, or the refusal alone."""
    item_id = message["id"]
    if message["status"] == "refused":
        yield "response.refusal.done", {"item_id": item_id, "output_index": 0,
                                        "content_index": 0, "refusal": message["text"],
                                        "category": message["refusal_category"]}
        return
    where = {"item_id": item_id, "output_index": 0, "content_index": 0}
    for chunk in text_chunks(message["text"], words=words):
        yield "response.output_text.delta", {**where, "delta": chunk}
    for index, citation in enumerate(message["citations"]):
        yield "response.output_text.annotation.added", {
            **where, "annotation_index": index,
            "annotation": {"type": "source_citation", "index": index + 1, **citation}}
    yield "response.output_text.done", {**where, "text": message["text"]}

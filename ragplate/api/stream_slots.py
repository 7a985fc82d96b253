"""The worker threads that prepare streamed answers, and who may use them.

A streamed answer keeps its thread until respond() has stored it, also when the client left
(that is what makes leaving harmless), so the threads are a pool of their own — not the
event loop's default one the rest of the API shares — and bounded: at most
``RAGPLATE_ASSISTANT_STREAM_WORKERS`` answers in preparation per process, at most
``RAGPLATE_ASSISTANT_STREAM_PER_PERSON`` of them one person's. A request over either bound
is refused before its stream opens (503 / 429), instead of waiting unseen in a queue, with
``Retry-After:`` :data:`RETRY_AFTER_SECONDS`.
Each slot also names its conversation, so that one is not deleted under an answer being
prepared for it (409).
"""

from __future__ import annotations

import threading
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from typing import Annotated

from fastapi import Depends, Request

from ragplate.api.deps import RuntimeDep
from ragplate.catalog.errors import ServiceError, TooManyRequestsError

#: When a refused stream may ask again (``Retry-After``): a slot is free again once an
#: answer is stored, a matter of seconds.
RETRY_AFTER_SECONDS = 5


class StreamSlots:
    """A bounded thread pool with a count per person."""

    def __init__(self, *, workers: int, per_person: int) -> None:
        self.workers = workers
        self.per_person = per_person
        self.executor = ThreadPoolExecutor(max_workers=workers,
                                           thread_name_prefix="ragplate-agent")
        self._lock = threading.Lock()
        self._running = 0
        self._by_person: Counter[int] = Counter()
        self._by_conversation: Counter[tuple[int, uuid.UUID | None]] = Counter()

    def acquire(self, person_id: int, conversation_id: uuid.UUID | None = None) -> None:
        """Take a slot for ``person_id``'s answer in ``conversation_id``, or raise without
        taking one."""
        with self._lock:
            if self._by_person[person_id] >= self.per_person:
                preparing = ("an answer of yours is still being prepared; send the next "
                             "message when it has arrived" if self.per_person == 1 else
                             f"{self.per_person} of your answers are still being prepared; "
                             "send the next message when one has arrived")
                raise TooManyRequestsError(preparing, retry_after=RETRY_AFTER_SECONDS)
            if self._running >= self.workers:
                raise ServiceError("the assistant is preparing as many answers as it can; "
                                   "try again in a moment", retry_after=RETRY_AFTER_SECONDS)
            self._running += 1
            self._by_person[person_id] += 1
            self._by_conversation[person_id, conversation_id] += 1

    def release(self, person_id: int, conversation_id: uuid.UUID | None = None) -> None:
        """Give back a slot taken by :meth:`acquire`."""
        with self._lock:
            self._running -= 1
            self._by_person[person_id] -= 1
            if self._by_person[person_id] <= 0:
                del self._by_person[person_id]
            self._by_conversation[person_id, conversation_id] -= 1
            if self._by_conversation[person_id, conversation_id] <= 0:
                del self._by_conversation[person_id, conversation_id]

    def preparing(self, person_id: int, conversation_id: uuid.UUID) -> bool:
        """Whether an answer of ``person_id`` in ``conversation_id`` is being prepared."""
        with self._lock:
            return self._by_conversation[person_id, conversation_id] > 0

    @property
    def running(self) -> int:
        """Answers in preparation now."""
        with self._lock:
            return self._running


async def process_slots(request: Request, runtime: RuntimeDep) -> StreamSlots:
    """The API process's slots, made on first use from the settings (on the event loop,
    so two first requests cannot make two)."""
    state = request.app.state
    if getattr(state, "stream_slots", None) is None:
        settings = runtime.settings
        state.stream_slots = StreamSlots(workers=settings.assistant_stream_workers,
                                         per_person=settings.assistant_stream_per_person)
    slots: StreamSlots = state.stream_slots
    return slots


StreamSlotsDep = Annotated[StreamSlots, Depends(process_slots)]

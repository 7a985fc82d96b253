"""The bounds of the streamed answers' worker pool."""

from __future__ import annotations

import pytest

from ragplate.api.stream_slots import StreamSlots
from ragplate.catalog.errors import ServiceError, TooManyRequestsError


def test_a_person_over_their_bound_and_a_process_over_its_own_are_refused() -> None:
    slots = StreamSlots(workers=3, per_person=2)
    slots.acquire(1)
    slots.acquire(1)
    with pytest.raises(TooManyRequestsError):
        slots.acquire(1)
    slots.acquire(2)
    with pytest.raises(ServiceError):
        slots.acquire(3)
    assert slots.running == 3

    slots.release(1)
    slots.acquire(3)  # the refusals took no slot: one was given back, one is free
    assert slots.running == 3
    with pytest.raises(ServiceError):
        slots.acquire(4)
    slots.executor.shutdown()

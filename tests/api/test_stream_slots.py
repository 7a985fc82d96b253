"""The bounds of the streamed answers' worker pool, and the conversations its slots name."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from ragplate.api.stream_slots import RETRY_AFTER_SECONDS, StreamSlots
from ragplate.catalog.errors import ServiceError, TooManyRequestsError
from ragplate.catalog.settings import Settings

README = Path(__file__).resolve().parents[2] / "README.md"


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


def test_a_slot_names_its_persons_conversation_until_it_is_given_back() -> None:
    slots = StreamSlots(workers=3, per_person=2)
    mine, theirs = uuid.uuid4(), uuid.uuid4()
    slots.acquire(1, mine)
    slots.acquire(1, mine)
    assert slots.preparing(1, mine)
    assert not slots.preparing(2, mine)  # only its owner's answers are counted
    assert not slots.preparing(1, theirs)
    with pytest.raises(TooManyRequestsError):
        slots.acquire(1, theirs)
    assert not slots.preparing(1, theirs)  # a refusal names nothing

    slots.release(1, mine)
    assert slots.preparing(1, mine)  # one of its two answers is still prepared
    slots.release(1, mine)
    assert not slots.preparing(1, mine) and slots.running == 0
    slots.executor.shutdown()


@pytest.mark.parametrize(("per_person", "words"), [
    (1, "an answer of yours is still being prepared; send the next message when it has "
        "arrived"),
    (2, "2 of your answers are still being prepared; send the next message when one has "
        "arrived")])
def test_a_refusal_says_when_to_ask_again_in_words_that_fit_the_count(
        per_person: int, words: str) -> None:
    slots = StreamSlots(workers=per_person + 1, per_person=per_person)
    for _ in range(per_person):
        slots.acquire(1)
    with pytest.raises(TooManyRequestsError) as too_many:
        slots.acquire(1)
    slots.acquire(2)
    with pytest.raises(ServiceError) as full:
        slots.acquire(3)

    assert str(too_many.value) == words
    assert too_many.value.retry_after == full.value.retry_after == RETRY_AFTER_SECONDS
    slots.executor.shutdown()


@pytest.mark.parametrize(("setting", "status"), [
    ("assistant_stream_workers", "503"), ("assistant_stream_per_person", "429")])
def test_each_bound_says_what_a_refused_stream_gets_and_when_to_ask_again(
        setting: str, status: str) -> None:
    # The setting's description (--help, the settings' JSON Schema) and the README's
    # configuration table, for an operator choosing the bound.
    wait = f"Retry-After: {RETRY_AFTER_SECONDS}"
    description = Settings.model_fields[setting].description or ""
    row = next(line for line in README.read_text().splitlines()
               if line.startswith(f"| `RAGPLATE_{setting.upper()}` |"))

    for text in (description, row):
        assert status in text and wait in text, text

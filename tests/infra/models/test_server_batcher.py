"""The adaptive batcher of the embeddings server client, with scripted outcomes."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from ragplate.catalog.errors import SelfHostedServiceError
from ragplate.infra.models.batcher import AdaptiveBatcher

ID = "0" * 32


class Clock:
    """A clock that each call moves on by what the script says."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def scripted(
    outcomes: list[int | float | None], clock: Clock
) -> tuple[Callable[[list[int]], list[int]], list[list[int]]]:
    """A call that, per attempt, fails with a status (int >= 100), takes some seconds
    (float) or succeeds at once (None); it records the items of every attempt."""
    attempts: list[list[int]] = []

    def call(batch: list[int]) -> list[int]:
        attempts.append(batch)
        outcome = outcomes.pop(0) if outcomes else None
        if isinstance(outcome, int) and outcome >= 100:
            raise SelfHostedServiceError(service="embeddings", endpoint="http://h:1/v1/embeddings",
                                         status=outcome, request_id=ID, reason="scripted")
        if outcome == 0:  # 0 stands for "unreachable" (status null)
            raise SelfHostedServiceError(service="embeddings", endpoint="http://h:1/v1/embeddings",
                                         status=None, request_id=ID, reason="scripted")
        if isinstance(outcome, float):
            clock.now += outcome
        return [x * 10 for x in batch]

    return call, attempts


@pytest.mark.parametrize("status", [413, 429, 500, 503, 408, 0])
def test_a_retryable_failure_halves_the_batch_and_retries_the_same_texts(status: int) -> None:
    clock = Clock()
    batcher = AdaptiveBatcher(8, slow_seconds=1.0, clock=clock)
    call, attempts = scripted([status], clock)

    results = batcher.run(list(range(8)), call)

    assert [len(a) for a in attempts] == [8, 4, 4]
    assert attempts[1] == attempts[0][:4]
    assert [x for part in results for x in part] == [x * 10 for x in range(8)]


@pytest.mark.parametrize("status", [400, 401, 404, 422])
def test_other_failures_are_raised_at_once(status: int) -> None:
    clock = Clock()
    batcher = AdaptiveBatcher(8, slow_seconds=1.0, clock=clock)
    call, attempts = scripted([status], clock)

    with pytest.raises(SelfHostedServiceError):
        batcher.run(list(range(8)), call)

    assert len(attempts) == 1


def test_a_server_that_stays_down_is_tried_down_to_one_text() -> None:
    clock = Clock()
    batcher = AdaptiveBatcher(8, slow_seconds=1.0, clock=clock)
    call, attempts = scripted([0] * 10, clock)

    with pytest.raises(SelfHostedServiceError):
        batcher.run(list(range(8)), call)

    assert [len(a) for a in attempts] == [8, 4, 2, 1]


def test_a_slow_answer_is_kept_and_halves_the_next_batch() -> None:
    clock = Clock()
    batcher = AdaptiveBatcher(8, slow_seconds=1.0, clock=clock)
    call, attempts = scripted([1.5], clock)

    results = batcher.run(list(range(16)), call)

    assert [len(a) for a in attempts][:2] == [8, 4]
    assert [x for part in results for x in part] == [x * 10 for x in range(16)]


def test_the_size_grows_back_by_half_after_fast_batches_up_to_the_limit() -> None:
    clock = Clock()
    batcher = AdaptiveBatcher(8, slow_seconds=1.0, grow_after=2, clock=clock)
    call, attempts = scripted([429, 429], clock)  # 8 -> 4 -> 2

    batcher.run(list(range(40)), call)

    sizes = [len(a) for a in attempts]
    assert sizes[:3] == [8, 4, 2]
    # Two fast batches at each size, then +50% (at least one): 2, 3, 4, 6, 8; the last
    # batch holds what is left.
    assert sizes[3:] == [2, 3, 3, 4, 4, 6, 6, 8, 2]
    assert batcher.size == 8 and max(sizes) == 8


def test_a_refused_size_is_never_tried_again() -> None:
    clock = Clock()
    batcher = AdaptiveBatcher(8, slow_seconds=1.0, grow_after=1, clock=clock)
    call, attempts = scripted([413], clock)

    batcher.run(list(range(40)), call)

    sizes = [len(a) for a in attempts]
    assert sizes[0] == 8 and sizes[1] == 4
    assert max(sizes[1:]) == 7 and batcher.ceiling == 7


def test_a_short_last_batch_does_not_count_towards_growth() -> None:
    clock = Clock()
    batcher = AdaptiveBatcher(4, slow_seconds=1.0, grow_after=1, clock=clock)
    batcher.lower_limit(2)
    call, attempts = scripted([], clock)

    batcher.run(list(range(5)), call)

    assert [len(a) for a in attempts] == [2, 2, 1]
    assert batcher.limit == 2 and batcher.size == 2


def test_a_single_text_that_fails_is_raised() -> None:
    clock = Clock()
    batcher = AdaptiveBatcher(8, slow_seconds=1.0, clock=clock)
    call, attempts = scripted([503], clock)

    with pytest.raises(SelfHostedServiceError):
        batcher.run([1], call)

    assert attempts == [[1]]

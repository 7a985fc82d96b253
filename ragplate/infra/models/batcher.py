"""The adaptive batcher: halve a batch when the server fails or is slow, grow back slowly.

A TEI refuses batches above its ``max_client_batch_size`` with 413, an overloaded server
answers 429 or 5xx or times out, and a CPU server answers a large batch after the client has
given up. Each of these halves the batch and retries the same texts; a slow answer is kept
but halves the next batch. After a few fast batches in a row the size grows by half (at
least one), never above the limit, and never again up to a size a 413 refused.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import TypeVar

from ragplate.catalog.errors import SelfHostedServiceError
from ragplate.infra.models.calls import retryable

T = TypeVar("T")
R = TypeVar("R")

logger = logging.getLogger("ragplate.servers")


class AdaptiveBatcher:
    """Sizes the batches of one server; its state outlives a single :meth:`run`."""

    def __init__(
        self,
        limit: int,
        *,
        slow_seconds: float,
        grow_after: int = 2,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if limit < 1:
            raise ValueError("a batch limit is at least 1")
        self._limit = limit
        self.size = limit
        self.ceiling = limit
        self.slow_seconds = slow_seconds
        self.grow_after = max(1, grow_after)
        self._clock = clock
        self._fast_streak = 0
        self._lock = threading.Lock()

    @property
    def limit(self) -> int:
        """The largest batch ever sent (the configured size, or a server's lower limit)."""
        return self._limit

    def lower_limit(self, limit: int) -> None:
        """Cap every batch at ``limit`` (e.g. TEI's ``max_client_batch_size``)."""
        with self._lock:
            self._limit = max(1, min(self._limit, limit))
            self.ceiling = min(self.ceiling, self._limit)
            self.size = min(self.size, self._limit)

    def run(self, items: Sequence[T], call: Callable[[list[T]], R]) -> list[R]:
        """``call`` on consecutive batches of ``items``, in order; one result per batch.

        A failure that a smaller batch may avoid (unreachable, timeout, 408, 413, 429, 5xx)
        retries the same texts with half as many; any other failure, or one with a single
        text, is raised.
        """
        results: list[R] = []
        start = 0
        while start < len(items):
            with self._lock:
                count = min(self.size, len(items) - start)
            began = self._clock()
            try:
                result = call(list(items[start : start + count]))
            except SelfHostedServiceError as exc:
                if count == 1 or not retryable(exc.status):
                    raise
                self._shrink(count, f"status {exc.status or 'null'}", refused=exc.status == 413)
                continue
            elapsed = self._clock() - began
            results.append(result)
            start += count
            if elapsed > self.slow_seconds:
                self._shrink(count, f"slow answer ({elapsed:.2f} s)", refused=False)
            else:
                self._succeeded(count)
        return results

    def _shrink(self, count: int, reason: str, *, refused: bool) -> None:
        with self._lock:
            before = self.size
            if refused:
                self.ceiling = max(1, min(self.ceiling, count - 1))
            self.size = max(1, min(count // 2, self.ceiling))
            self._fast_streak = 0
            after = self.size
        if after != before:
            logger.info("Embeddings batch size %d -> %d: %s", before, after, reason)

    def _succeeded(self, count: int) -> None:
        with self._lock:
            if count < self.size:  # a short last batch says nothing about the size
                return
            self._fast_streak += 1
            if self._fast_streak < self.grow_after or self.size >= self.ceiling:
                return
            before = self.size
            self.size = min(self.ceiling, self.size + max(1, self.size // 2))
            self._fast_streak = 0
            after = self.size
        logger.info("Embeddings batch size %d -> %d: recovered", before, after)

"""Writing query records off the request path: one background thread per process drains a
bounded queue into the store.

Handing a record over never blocks and never raises: a full queue (a store that hangs or
is slow) drops the record, and a write that fails is logged with the exception class only
(the record may hold a question a person typed).
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from typing import Any

logger = logging.getLogger("ragplate.analytics")

#: Records waiting to be written at most; more are dropped.
CAPACITY = 1000


#: Writes one record of a person (their id, never stored: the store checks they still
#: exist, so a person erased while their record waited is not logged again).
Write = Callable[[dict[str, Any], int], object]


class QueryWriter:
    """A bounded queue and the daemon thread that writes it with ``write``."""

    def __init__(self, write: Write, *, capacity: int = CAPACITY) -> None:
        self._write = write
        self._queue: queue.Queue[tuple[dict[str, Any], int]] = queue.Queue(maxsize=capacity)
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self.dropped = 0
        self.failed = 0

    def submit(self, record: dict[str, Any], *, user_id: int) -> None:
        """Hand ``record`` of the person ``user_id`` to the writer thread (started on first
        use); never blocks."""
        try:
            self._start()
            self._queue.put_nowait((record, user_id))
        except queue.Full:
            self.dropped += 1
            logger.warning("query record dropped: the analytics writer is behind")
        except Exception as exc:  # the answer path must not fail for analytics
            logger.warning("query record dropped (%s)", exc.__class__.__name__)

    def drain(self, timeout: float) -> bool:
        """Wait until every record handed over was written or failed, at most ``timeout``
        seconds; whether the queue is empty."""
        done = threading.Event()

        def wait() -> None:
            self._queue.join()
            done.set()

        threading.Thread(target=wait, daemon=True).start()
        return done.wait(timeout)

    def _start(self) -> None:
        if self._thread is not None:
            return
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="ragplate-analytics",
                                                daemon=True)
                self._thread.start()

    def _run(self) -> None:
        while True:
            record, user_id = self._queue.get()
            try:
                self._write(record, user_id)
            except Exception as exc:
                self.failed += 1
                logger.warning("query record not written (%s)", exc.__class__.__name__)
            finally:
                self._queue.task_done()

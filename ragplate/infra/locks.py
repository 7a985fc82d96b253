"""PostgreSQL advisory locks of the embedding switch.

They stand where the spec has cache locks, with one advantage: a lock belongs to a
database session, so a process that dies (even by SIGKILL) releases it when its
connection closes, and no expiry time is needed to recover from a dead holder.

- the **start lock** (:func:`start_lock`): one start at a time; another start refuses;
- the **state lock** (:func:`state_transaction`): every write of the switch state, waited
  for ``state_lock_wait_seconds``;
- the **run lock** (:class:`RunLock`): held by the process executing a switch for as long
  as it runs, so ``--resume``/``--abandon`` can tell a switch running normally (held) from
  one whose process was killed (free).

And one of indexing: the **index lock** (:func:`index_lock`), held by an ``index-docs``
run while it plans and writes, so that two runs (a cron job and a manual run) do not do
the same work twice.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import OperationalError

from ragplate.catalog.switch import StateLockTimeoutError

#: First key of ragplate's advisory locks (the two-integer form keeps them apart from
#: the single-bigint locks of the stores and migrations).
LOCK_CLASS = 7310
START_LOCK = 1
STATE_LOCK = 2
RUN_LOCK = 3
INDEX_LOCK = 4


def _try(conn: Connection, lock: int) -> bool:
    sql = sa.text("SELECT pg_try_advisory_lock(:c, :o)")
    return bool(conn.execute(sql, {"c": LOCK_CLASS, "o": lock}).scalar_one())


def _unlock(conn: Connection, lock: int) -> None:
    conn.execute(sa.text("SELECT pg_advisory_unlock(:c, :o)"), {"c": LOCK_CLASS, "o": lock})


@contextlib.contextmanager
def _session_lock(engine: Engine, lock: int) -> Iterator[bool]:
    """Try a session lock on a connection kept out of the pool for the block; yields
    whether it was obtained."""
    conn = engine.connect()
    try:
        # Autocommit: the lock must not depend on a transaction that a later statement of
        # this connection could roll back.
        conn = conn.execution_options(isolation_level="AUTOCOMMIT")
        acquired = _try(conn, lock)
        try:
            yield acquired
        finally:
            if acquired:
                with contextlib.suppress(Exception):
                    _unlock(conn, lock)
    finally:
        conn.close()


@contextlib.contextmanager
def start_lock(engine: Engine) -> Iterator[bool]:
    """The start lock for the block: yields ``False`` when another start holds it (the
    caller refuses). Held only while a start checks and stores its state."""
    with _session_lock(engine, START_LOCK) as acquired:
        yield acquired


@contextlib.contextmanager
def index_lock(engine: Engine) -> Iterator[bool]:
    """The index lock for the block: yields ``False`` when another indexing run holds it."""
    with _session_lock(engine, INDEX_LOCK) as acquired:
        yield acquired


def held(engine: Engine, lock: int) -> bool:
    """Whether another session holds ``lock`` right now (takes and drops it otherwise)."""
    with _session_lock(engine, lock) as acquired:
        return not acquired


def run_lock_held(engine: Engine) -> bool:
    """Whether a process is executing a switch (its run lock is held)."""
    return held(engine, RUN_LOCK)


class RunLock:
    """The run lock of the process executing a switch; :meth:`acquire` says whether it
    was obtained (another live process runs the switch otherwise)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._conn: Connection | None = None

    def acquire(self) -> bool:
        """Take the lock on a dedicated connection; ``False`` when another session has it."""
        if self._conn is not None:
            return True
        conn = self.engine.connect().execution_options(isolation_level="AUTOCOMMIT")
        if _try(conn, RUN_LOCK):
            self._conn = conn
            return True
        conn.close()
        return False

    def release(self) -> None:
        """Drop the lock (closing the connection would drop it too)."""
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(Exception):
                _unlock(conn, RUN_LOCK)
            conn.close()

    def __enter__(self) -> RunLock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


@contextlib.contextmanager
def state_transaction(engine: Engine, wait_seconds: float) -> Iterator[Connection]:
    """A transaction holding the state lock, obtained within ``wait_seconds`` or
    :class:`StateLockTimeoutError`. The lock is released at commit or rollback."""
    with engine.begin() as conn:
        millis = max(1, int(wait_seconds * 1000))
        conn.execute(sa.text(f"SET LOCAL lock_timeout = '{millis}ms'"))
        try:
            conn.execute(sa.text("SELECT pg_advisory_xact_lock(:c, :o)"),
                         {"c": LOCK_CLASS, "o": STATE_LOCK})
        except OperationalError as exc:
            raise StateLockTimeoutError(
                f"the switch state lock was not free within {wait_seconds:g} s "
                "(state_lock_wait_seconds)"
            ) from exc
        # The writes that follow must not time out on row locks of unrelated work.
        conn.execute(sa.text("SET LOCAL lock_timeout = 0"))
        yield conn

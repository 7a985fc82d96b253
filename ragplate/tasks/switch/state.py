"""Reading and writing the switch state row, always under the state lock when writing."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, TypeVar

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from ragplate.catalog.schema import embedding_switch
from ragplate.catalog.switch import (
    FailureKind,
    Phase,
    StateLockTimeoutError,
    SwitchState,
    now,
)
from ragplate.infra.locks import state_transaction

log = logging.getLogger("ragplate.switch")

T = TypeVar("T")
_ROW = 1


def _from_row(row: Any) -> SwitchState:
    if row is None:
        return SwitchState()
    data = dict(row.data or {})
    # The columns win: they are what other readers see.
    data.update(status=row.status, phase=row.phase, target=row.target, previous=row.previous)
    return SwitchState.model_validate(data)


def read_state(conn_or_engine: Connection | Engine, *, for_update: bool = False) -> SwitchState:
    """The stored state (idle when the row is missing)."""
    query = sa.select(embedding_switch).where(embedding_switch.c.id == _ROW)
    if for_update:
        query = query.with_for_update()
    if isinstance(conn_or_engine, Engine):
        with conn_or_engine.connect() as conn:
            return _from_row(conn.execute(query).first())
    return _from_row(conn_or_engine.execute(query).first())


def write_state(conn: Connection, state: SwitchState) -> None:
    """Store ``state`` in the caller's transaction (which holds the state lock)."""
    data = state.model_dump(mode="json")
    values = {"status": state.status, "phase": state.phase, "target": state.target,
              "previous": state.previous, "data": data, "updated_at": sa.func.now()}
    updated = conn.execute(
        embedding_switch.update().where(embedding_switch.c.id == _ROW).values(**values)
    )
    if updated.rowcount == 0:
        conn.execute(embedding_switch.insert().values(id=_ROW, **values))


def update_state(
    engine: Engine, wait_seconds: float, change: Callable[[SwitchState], T]
) -> tuple[SwitchState, T]:
    """Read the state under the lock, let ``change`` modify it, store it; returns the
    stored state and what ``change`` returned. Nothing is stored when ``change`` raises."""
    with state_transaction(engine, wait_seconds) as conn:
        state = read_state(conn, for_update=True)
        result = change(state)
        write_state(conn, state)
        return state, result


def mark_failed(
    engine: Engine, wait_seconds: float, phase: Phase | None, kind: FailureKind, error: str
) -> SwitchState:
    """Store ``failed`` with the phase and the error. When the lock cannot be had, the
    failure is written without it rather than leave a dead switch ``running``."""

    def fail(state: SwitchState) -> None:
        if state.status == "idle":
            return
        state.status = "failed"
        state.phase = phase or state.phase
        state.failure = kind
        state.error = error

    try:
        state, _ = update_state(engine, wait_seconds, fail)
        return state
    except StateLockTimeoutError:
        log.warning("switch state lock busy: writing the failure without it")
        with engine.begin() as conn:
            state = read_state(conn, for_update=True)
            fail(state)
            write_state(conn, state)
            return state


def touch_progress(state: SwitchState) -> None:
    """Record that work was dispatched or written now (the stall clock restarts)."""
    state.progress_at = now()

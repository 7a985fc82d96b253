"""The rules of writing the switch state: under the state lock, a change applied to the
stored state or nothing, and a failure stored even when the lock is busy. The row itself
is read and written by :mod:`ragplate.infra.switch_state`."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TypeVar

from sqlalchemy.engine import Engine

from ragplate.catalog.switch import (
    FailureKind,
    Phase,
    StateLockTimeoutError,
    SwitchState,
    now,
)
from ragplate.infra.locks import state_transaction
from ragplate.infra.switch_state import read_state, write_state

log = logging.getLogger("ragplate.switch")

T = TypeVar("T")


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

"""Running the units of a phase as Prefect task runs, in rounds, with stall detection.

The phase dispatches every pending unit (a chunk, a batch of texts), waits for the task
runs, reads the stored state again and dispatches what is still pending, up to
:data:`~ragplate.catalog.switch.MAX_ROUNDS` rounds. While task runs are queued and no unit
was written for ``stall_seconds`` since the last dispatch or the last unit written, the
phase fails naming the queue and the worker, so a dead or wedged worker never keeps a
switch "running" forever.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from prefect.futures import PrefectFuture, wait

from ragplate.catalog.switch import INDEX_QUEUE, MAX_ROUNDS, SwitchState, now

POLL_SECONDS = 0.5

U = TypeVar("U")


class StallError(Exception):
    """No unit was written for the stall time while task runs were queued."""


class RoundsError(Exception):
    """Units still pending after the last round; ``pending`` names them."""

    def __init__(self, message: str, pending: Sequence[Any]) -> None:
        super().__init__(message)
        self.pending = list(pending)


def worker_name() -> str:
    """Who executes the queued task runs: this process's task runner."""
    try:
        from prefect.runtime import flow_run

        run = f"flow run '{flow_run.name}'" if flow_run.id else "no flow run"
    except Exception:  # outside Prefect
        run = "no flow run"
    return f"the task runner of {run} (process {os.getpid()} on {socket.gethostname()})"


def wait_for(
    futures: Sequence[PrefectFuture[Any]],
    *,
    read_state: Callable[[], SwitchState],
    stall_seconds: float,
    phase: str,
    on_poll: Callable[[SwitchState], None] | None = None,
) -> list[str]:
    """Wait until every task run ended and return the messages of those that failed;
    raise :class:`StallError` when the state's ``progress_at`` is older than
    ``stall_seconds`` while some are still queued."""
    pending = list(futures)
    while pending:
        _, not_done = wait(pending, timeout=POLL_SECONDS)
        pending = list(not_done)
        state = read_state()
        if on_poll is not None:
            on_poll(state)
        if not pending:
            break
        last = state.progress_at or now()
        idle = (now() - last).total_seconds()
        if idle > stall_seconds:
            raise StallError(
                f"{phase} phase stalled: no chunk written for {idle:.0f} s "
                f"(index_chunk_stall_seconds = {stall_seconds:g}) with {len(pending)} task "
                f"runs queued on '{INDEX_QUEUE}'; worker: {worker_name()}. Check that worker "
                f"and any Prefect concurrency limit on the tag '{INDEX_QUEUE}', then run "
                "`ragplate embeddings switch --resume` (or --abandon)"
            )
    return [_error(f) for f in futures if _error(f)]


def _error(future: PrefectFuture[Any]) -> str:
    """``Type: message`` of the exception a finished task run raised, else empty."""
    try:
        outcome = future.result(timeout=0, raise_on_failure=False)
    except Exception as exc:  # a crashed run has no result to read
        outcome = exc
    return f"{type(outcome).__name__}: {outcome}" if isinstance(outcome, BaseException) else ""


def run_rounds(
    *,
    pending: Callable[[], list[U]],
    start_round: Callable[[int, list[U]], None],
    submit: Callable[[U], PrefectFuture[Any]],
    read_state: Callable[[], SwitchState],
    stall_seconds: float,
    phase: str,
    describe: Callable[[list[U]], str],
    on_poll: Callable[[SwitchState], None] | None = None,
) -> int:
    """Dispatch the pending units in up to :data:`MAX_ROUNDS` rounds; returns the rounds
    used. Raises :class:`RoundsError` naming what is still pending after the last one
    (the stored state is read again first: the last unit may have been written while
    the round ran)."""
    rounds, errors = 0, []
    for round_ in range(1, MAX_ROUNDS + 1):
        ids = pending()
        if not ids:
            return rounds
        rounds = round_
        start_round(round_, ids)
        futures = [submit(unit) for unit in ids]
        errors = wait_for(futures, read_state=read_state, stall_seconds=stall_seconds,
                          phase=phase, on_poll=on_poll)
    ids = pending()
    if ids:
        last = f" (last error: {errors[-1]})" if errors else ""
        raise RoundsError(
            f"{phase} phase: still pending after {MAX_ROUNDS} rounds: {describe(ids)}{last}",
            ids,
        )
    return rounds

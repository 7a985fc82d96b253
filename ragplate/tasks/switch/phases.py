"""The five phases as plain functions over the stored state.

Each phase reads the state, does its work (dispatching chunk or batch task runs through
the ``submit`` callables the flow hands over), and either advances the state to the next
phase or stores ``failed`` with the phase, the kind of failure and the reason, raising
:class:`~ragplate.catalog.switch.SwitchFailedError`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from prefect.futures import PrefectFuture

from ragplate.catalog.switch import (
    FailureKind,
    Phase,
    SwitchFailedError,
    SwitchState,
)
from ragplate.infra.runtime import Runtime
from ragplate.infra.switch_state import read_state
from ragplate.tasks.switch import activate as activation
from ragplate.tasks.switch import faults, gate, indexes, preflight, verify
from ragplate.tasks.switch.dispatch import RoundsError, StallError, run_rounds
from ragplate.tasks.switch.embeddings import TextBatch, batches, describe, missing_texts
from ragplate.tasks.switch.report import Reporter
from ragplate.tasks.switch.state import mark_failed, touch_progress, update_state

log = logging.getLogger("ragplate.switch")


@dataclass
class PhaseContext:
    """What a phase needs: the runtime, the reporter and how to dispatch task runs."""

    runtime: Runtime
    reporter: Reporter
    submit_chunk: Callable[[str, str, str], PrefectFuture[Any]]
    submit_batch: Callable[[str, TextBatch], PrefectFuture[Any]]

    @property
    def wait(self) -> float:
        """``state_lock_wait_seconds``."""
        return self.runtime.settings.state_lock_wait_seconds

    def read(self) -> SwitchState:
        """The stored state."""
        return read_state(self.runtime.engine)

    def change(self, change: Callable[[SwitchState], None]) -> SwitchState:
        """Apply ``change`` to the stored state under the lock, publish it, return it."""
        state, _ = update_state(self.runtime.engine, self.wait, change)
        self.reporter.update(state)
        return state

    def fail(self, phase: Phase, kind: FailureKind, reason: str) -> SwitchFailedError:
        """Store ``failed`` and return the error to raise."""
        state = mark_failed(self.runtime.engine, self.wait, phase, kind, reason)
        self.reporter.update(state)
        return SwitchFailedError(f"switch to {state.target} failed in phase {phase}: {reason}")


def _advance(ctx: PhaseContext, to: Phase, **fields: Any) -> SwitchState:
    def change(state: SwitchState) -> None:
        state.phase = to
        for name, value in fields.items():
            setattr(state, name, value)
        touch_progress(state)

    return ctx.change(change)


def run_preflight(ctx: PhaseContext) -> SwitchState:
    """Count the work (the start already checked the target)."""
    faults.checkpoint("preflight")
    texts, files = preflight.count_work(ctx.runtime)
    faults.checkpoint("preflight")
    state = _advance(ctx, "embeddings", texts_total=texts, docs_files=files, embed_round=0)
    faults.checkpoint("preflight")
    return state


def _rounds(ctx: PhaseContext, phase: Phase, **kwargs: Any) -> None:
    settings = ctx.runtime.settings
    try:
        run_rounds(read_state=ctx.read, stall_seconds=settings.index_chunk_stall_seconds,
                   phase=phase, on_poll=ctx.reporter.update, **kwargs)
    except StallError as exc:
        raise ctx.fail(phase, "stall", str(exc)) from None
    except RoundsError as exc:
        raise ctx.fail(phase, "rounds", str(exc)) from None


def run_embeddings(ctx: PhaseContext) -> SwitchState:
    """Embed what the target misses, up to three rounds; then hand over."""
    state = ctx.read()
    target = state.target or ""
    size = ctx.runtime.settings.index_chunk_size

    def start_round(number: int, units: list[TextBatch]) -> None:
        def change(current: SwitchState) -> None:
            current.embed_round = number
            if number == 1:
                current.texts_missing = sum(u.texts for u in units)
                current.records_embedded = 0
            touch_progress(current)

        ctx.change(change)

    faults.checkpoint("embeddings")
    _rounds(ctx, "embeddings",
            pending=lambda: batches(missing_texts(ctx.runtime, target), size),
            start_round=start_round,
            submit=lambda batch: ctx.submit_batch(target, batch),
            describe=lambda _: "texts " + describe(missing_texts(ctx.runtime, target)))
    state = ctx.read()
    return _advance(ctx, state.after_embeddings, after_embeddings="indexes")


def _chunks(ctx: PhaseContext, phase: Phase) -> None:
    state = ctx.read()
    assert state.plan is not None
    plan_id = state.plan.plan_id

    def start_round(number: int, ids: list[str]) -> None:
        def change(current: SwitchState) -> None:
            if current.plan is not None and current.plan.plan_id == plan_id:
                current.plan.round = number
            touch_progress(current)

        ctx.change(change)

    def describe_chunks(ids: list[str]) -> str:
        plan = ctx.read().plan
        found = [plan.get(i) for i in ids] if plan is not None else []
        return ", ".join(c.describe() for c in found if c is not None)

    _rounds(ctx, phase, pending=lambda: indexes.pending_ids(ctx.runtime, plan_id),
            start_round=start_round, submit=lambda cid: ctx.submit_chunk(phase, plan_id, cid),
            describe=describe_chunks)


def run_indexes(ctx: PhaseContext) -> SwitchState:
    """Once-only work and plan (unless a resume kept them), then every pending chunk."""
    state = ctx.read()
    if state.prepare or state.plan is None or state.plan.purpose != "indexes":
        plan = indexes.prepare(ctx.runtime, state)

        def store(current: SwitchState) -> None:
            current.plan, current.prepare = plan, False
            touch_progress(current)

        state = ctx.change(store)
    faults.checkpoint("indexes")
    _chunks(ctx, "indexes")
    indexes.finish(ctx.runtime, state)
    # Every chunk is written: the plan is cleared and verify makes its own.
    return _advance(ctx, "verify", plan=None)


def run_verify(ctx: PhaseContext) -> SwitchState:
    """Refresh every record's target rows, check, then the evaluation gate."""
    state = ctx.read()
    if state.plan is None or state.plan.purpose != "verify":
        plan = verify.refresh_plan(ctx.runtime)

        def store(current: SwitchState) -> None:
            current.plan = plan
            touch_progress(current)

        state = ctx.change(store)
    faults.checkpoint("verify")
    _chunks(ctx, "verify")
    state = ctx.read()
    problems = verify.check(ctx.runtime, state)
    faults.checkpoint("verify")
    if problems:
        raise ctx.fail("verify", "check", "; ".join(problems))
    if state.abandon:
        # It goes back to the model that still serves: the gate would compare it with
        # itself.
        log.info("abandoning back to %s, which serves already: no evaluation gate",
                 state.target)
        return _advance(ctx, "activate", plan=None, gate=None)
    result = gate.evaluate(ctx.runtime, state.target or "")
    outcome = {**result.as_dict(), "forced": False}
    if not result.measured:
        log.warning("%s: neither model finds a source the gate's questions expect (are "
                    "ragplate's own docs/ indexed?), so the gate compared nothing",
                    result.reason())
    if not result.passed:
        if not state.force_activate:
            ctx.change(lambda s: setattr(s, "gate", outcome))
            raise ctx.fail("verify", "gate", result.reason() + ": refused to activate "
                           "(to override: ragplate embeddings switch --resume "
                           "--force-activate, or a run of the embeddings-switch deployment "
                           "with action resume and force_activate true)")
        outcome["forced"] = True
        log.warning("%s: activating anyway (--force-activate)", result.reason())
    faults.checkpoint("verify")
    return _advance(ctx, "activate", plan=None, gate=outcome)


def run_activate(ctx: PhaseContext) -> SwitchState:
    """The atomic activation (harmless to repeat)."""
    faults.checkpoint("activate")
    state = activation.activate(ctx.runtime)
    ctx.reporter.update(state)
    return state


PHASE_FUNCTIONS: dict[Phase, Callable[[PhaseContext], SwitchState]] = {
    "preflight": run_preflight,
    "embeddings": run_embeddings,
    "indexes": run_indexes,
    "verify": run_verify,
    "activate": run_activate,
}

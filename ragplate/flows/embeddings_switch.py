"""``embeddings-switch``: move search to another embedding model with no downtime.

``action``: ``start`` (needs ``profile``), ``resume`` or ``abandon``. The flow holds the
run lock while it runs, stores the action, then runs the stored state's phase tasks until
the switch is activated or fails. A failed switch fails the flow run; retrying that flow
run resumes the switch (the flow reads the stored state).
"""

from __future__ import annotations

import time
from typing import Any

from prefect import flow
from prefect.task_runners import ThreadPoolTaskRunner

from ragplate.catalog.switch import Action, SwitchFailedError, SwitchRefusedError, SwitchState
from ragplate.infra.environment import get_settings
from ragplate.infra.locks import RunLock
from ragplate.infra.runtime import Runtime
from ragplate.infra.switch_state import read_state
from ragplate.infra.worker_watch import watch_worker
from ragplate.tasks.flow_runs import crash_orphans
from ragplate.tasks.switch import steps
from ragplate.tasks.switch.phases import PhaseContext
from ragplate.tasks.switch.report import Reporter
from ragplate.tasks.switch.state import mark_failed


def _flow_run() -> tuple[str | None, int]:
    from prefect.runtime import flow_run

    return (str(flow_run.id) if flow_run.id else None), int(flow_run.run_count or 1)


# One worker thread: pgvector index writes are not parallel, and the embedding model
# already uses every core.
@flow(name="embeddings-switch", log_prints=True,
      task_runner=ThreadPoolTaskRunner(max_workers=1))  # type: ignore[arg-type]
def embeddings_switch(
    action: Action = "start", profile: str | None = None, force_activate: bool = False
) -> dict[str, Any]:
    """Start, resume or abandon an embedding-model switch and run it to its end."""
    watch_worker()  # this run ends with the worker that started it
    steps.check_inputs(action, profile)
    runtime = Runtime(get_settings())
    run_lock = RunLock(runtime.engine)
    if not run_lock.acquire():
        raise SwitchRefusedError("refused: another process is executing the switch right now")
    try:
        crash_orphans("embeddings-switch")
        flow_run_id, run_count = _flow_run()
        if run_count > 1 and read_state(runtime.engine).status != "idle":
            action = "resume"  # a retried flow run continues the stored switch
        reporter = Reporter()
        reporter.open()
        state = steps.begin(runtime, action, profile, force_activate, flow_run_id)
        reporter.update(state)
        if state.status == "idle":  # an abandon that cleared a preflight, or only a prune
            outcome = "cleared" if action == "abandon" else "pruned"
        else:
            outcome = "restored" if state.abandon else "activated"
        delays = runtime.settings.switch_retry_delays
        chunk = steps.write_chunk.with_options(retry_delay_seconds=delays)
        batch = steps.embed_batch.with_options(retry_delay_seconds=delays)
        ctx = PhaseContext(
            runtime, reporter,
            submit_chunk=lambda phase, plan_id, chunk_id: chunk.submit(runtime, phase, plan_id,
                                                                       chunk_id),
            submit_batch=lambda target, texts: batch.submit(runtime, target, texts),
        )
        timings: dict[str, float] = {}
        while state.status == "running" and state.phase is not None:
            phase = state.phase
            started = time.perf_counter()
            try:
                state = steps.phase_task(phase, delays)(phase, ctx)
                timings[phase] = round(timings.get(phase, 0.0) + time.perf_counter() - started,
                                       3)
            except SwitchFailedError:
                reporter.status(read_state(runtime.engine))
                raise
            except Exception as exc:
                # Retries are spent: record the failure so --resume/--abandon accept it.
                state = mark_failed(runtime.engine, runtime.settings.state_lock_wait_seconds,
                                    phase, "error", f"{type(exc).__name__}: {exc}")
                reporter.status(state)
                raise SwitchFailedError(
                    f"switch to {state.target} failed in phase {phase}: {state.error}"
                ) from exc
        return _finish(runtime, state, reporter, outcome, timings)
    finally:
        run_lock.release()


def _finish(runtime: Runtime, state: SwitchState, reporter: Reporter, outcome: str,
            timings: dict[str, float]) -> dict[str, Any]:
    pruned = steps.prune(runtime) if state.prune_pending else None
    state = read_state(runtime.engine)
    reporter.update(state)
    summary = {"outcome": outcome, "serving": runtime.active_profile().key,
               "last": state.last, "pruned": pruned, "prune_pending": state.prune_pending,
               "phase_seconds": timings}
    reporter.status(state, summary)
    return summary

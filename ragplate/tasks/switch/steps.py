"""Thin Prefect ``@task`` wrappers of the switch steps.

A chunk or a batch of texts is one task run, retried (3 tries, backoff from
``switch_retry_delays``, 10 then 30 s by default) unless it failed on something a retry
cannot fix. A phase task is retried the same way for any error that is not a switch
failure (those are stored in the state and end the run).
"""

from __future__ import annotations

from typing import Any

from prefect import task
from prefect.cache_policies import NO_CACHE

from ragplate.catalog.switch import (
    CHUNK_TRIES,
    INDEX_QUEUE,
    Action,
    SwitchFailedError,
    SwitchRefusedError,
    SwitchState,
)
from ragplate.infra.runtime import Runtime
from ragplate.tasks.retries import retry_unless_permanent
from ragplate.tasks.switch import activate, embeddings, indexes, preflight
from ragplate.tasks.switch.embeddings import TextBatch
from ragplate.tasks.switch.phases import PHASE_FUNCTIONS, PhaseContext

DEFAULT_DELAYS: list[float] = [10.0, 30.0]


def retry_phase(task_: Any, task_run: Any, state: Any) -> bool:
    """Retry a phase on an unexpected error, never on a stored failure or a refusal."""
    try:
        state.result()
    except (SwitchFailedError, SwitchRefusedError):
        return False
    except Exception:
        return retry_unless_permanent(task_, task_run, state)
    return True


@task(name="switch-chunk", task_run_name="{phase} {chunk_id}", tags=[INDEX_QUEUE],
      retries=CHUNK_TRIES - 1, retry_delay_seconds=DEFAULT_DELAYS,
      retry_condition_fn=retry_unless_permanent, cache_policy=NO_CACHE)
def write_chunk(runtime: Runtime, phase: str, plan_id: str, chunk_id: str) -> str:
    """Write one chunk of the stored plan (see :func:`indexes.write_chunk`); ``phase``
    (indexes or verify) only names the task run."""
    return indexes.write_chunk(runtime, plan_id, chunk_id)


@task(name="switch-embed-batch", task_run_name="embed {batch.id}", tags=["embeddings"],
      retries=CHUNK_TRIES - 1, retry_delay_seconds=DEFAULT_DELAYS,
      retry_condition_fn=retry_unless_permanent, cache_policy=NO_CACHE)
def embed_batch(runtime: Runtime, target: str, batch: TextBatch) -> int:
    """Embed one batch of missing texts with the target (see
    :func:`embeddings.embed_batch`)."""
    return embeddings.embed_batch(runtime, target, batch)


@task(name="switch-check-inputs", cache_policy=NO_CACHE)
def check_inputs(action: Action, profile: str | None) -> None:
    """Refuse what the run's parameters alone get wrong (a start without a profile, an
    unknown profile) before the run lock is taken: runs started together would otherwise
    be refused for the lock another of them holds, not for what is wrong with them."""
    if action == "start" and not profile:
        raise SwitchRefusedError("refused: start needs a profile")
    if profile:
        preflight.declared(profile)


@task(name="switch-begin", cache_policy=NO_CACHE)
def begin(runtime: Runtime, action: Action, profile: str | None, force_activate: bool,
          flow_run_id: str | None) -> SwitchState:
    """Store the start, the resume or the abandon (every refusal changes nothing)."""
    if action == "start":
        if not profile:
            raise SwitchRefusedError("refused: start needs a profile")
        return preflight.start(runtime, profile, force_activate=force_activate,
                               flow_run_id=flow_run_id)
    if action == "resume":
        return preflight.resume(runtime, force_activate=force_activate,
                                flow_run_id=flow_run_id, own_run_lock=True)
    return preflight.abandon(runtime, flow_run_id=flow_run_id, own_run_lock=True)


def phase_task(phase: str, delays: list[float]) -> Any:
    """The task of one phase, with the retry delays in force."""
    return _phase.with_options(name=f"switch-{phase}", retry_delay_seconds=delays)


@task(name="switch-phase", retries=CHUNK_TRIES - 1, retry_delay_seconds=DEFAULT_DELAYS,
      retry_condition_fn=retry_phase, cache_policy=NO_CACHE)
def _phase(phase: str, ctx: PhaseContext) -> SwitchState:
    return PHASE_FUNCTIONS[phase](ctx)  # type: ignore[index]


@task(name="switch-prune", cache_policy=NO_CACHE)
def prune(runtime: Runtime) -> dict[str, Any] | None:
    """Drop the other models' rows and indexes; ``None`` when it failed (logged with
    the prune command)."""
    report = activate.prune_after_activation(runtime)
    return None if report is None else report.as_dict()

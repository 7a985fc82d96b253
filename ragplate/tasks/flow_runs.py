"""The step a flow takes first: it marks the runs of the same flow that a dead process left
``RUNNING`` as ``CRASHED`` (see :mod:`ragplate.infra.flow_runs`): every other run, for a
flow holding its lock; a run whose process is gone, for a flow whose runs may run side by
side."""

from __future__ import annotations

from prefect import task
from prefect.cache_policies import NO_CACHE

from ragplate.infra import flow_runs


@task(name="crash-orphaned-runs", cache_policy=NO_CACHE)
def crash_orphans(flow_name: str) -> list[str]:
    """Mark the orphaned runs of ``flow_name`` ``CRASHED``; returns their ids. Best effort:
    a failure is logged and the run goes on (see :func:`ragplate.infra.flow_runs.crash_orphans`)."""
    from prefect.runtime import flow_run

    current = str(flow_run.id) if flow_run.id else None
    return flow_runs.crash_orphans(flow_name, current=current)


@task(name="crash-runs-of-gone-processes", cache_policy=NO_CACHE)
def crash_gone() -> list[str]:
    """Tag this run with its process and mark the runs of its flow whose process is gone
    ``CRASHED``; returns their ids. Best effort (see
    :func:`ragplate.infra.flow_runs.crash_gone`)."""
    from prefect.runtime import flow_run

    current = str(flow_run.id) if flow_run.id else None
    return flow_runs.crash_gone(str(flow_run.flow_name), current=current)

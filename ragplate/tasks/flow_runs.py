"""The step a flow takes first: it marks the runs of the same flow that a dead process left
``RUNNING`` as ``CRASHED`` (see :mod:`ragplate.infra.flow_runs`): every other run, for a
flow holding its lock; a run whose process is gone, for a flow whose runs may run side by
side."""

from __future__ import annotations

import logging

from prefect import task
from prefect.cache_policies import NO_CACHE

from ragplate.infra import flow_runs

logger = logging.getLogger(__name__)


@task(name="crash-orphaned-runs", cache_policy=NO_CACHE)
def crash_orphans(flow_name: str) -> list[str]:
    """Mark the orphaned runs of ``flow_name`` ``CRASHED``; returns their ids. Best effort:
    a failure is logged and the run goes on (see :func:`ragplate.infra.flow_runs.crash_orphans`)."""
    from prefect.runtime import flow_run

    current = str(flow_run.id) if flow_run.id else None
    return flow_runs.crash_orphans(flow_name, current=current)


@task(name="crash-runs-of-gone-processes", cache_policy=NO_CACHE)
def crash_gone(flow_name: str) -> list[str]:
    """Tag this run with its process and mark the runs of ``flow_name`` whose process is
    gone ``CRASHED``; returns their ids. Best effort: a failure is logged and the run goes
    on."""
    from prefect.runtime import flow_run

    current = str(flow_run.id) if flow_run.id else None
    try:
        return flow_runs.crash_runs_of_gone_processes(flow_name, current=current)
    except Exception as exc:
        logger.warning("could not look for orphaned runs of %s (%s)", flow_name,
                       type(exc).__name__)
        return []

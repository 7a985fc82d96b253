"""The step a flow holding its lock takes first: it marks the runs of the same flow that a
dead process left ``RUNNING`` as ``CRASHED`` (see :mod:`ragplate.infra.flow_runs`)."""

from __future__ import annotations

import logging

from prefect import task
from prefect.cache_policies import NO_CACHE

from ragplate.infra.flow_runs import crash_orphaned_runs

log = logging.getLogger(__name__)

REASON = ("the process running this flow run died (killed, out of memory or its machine "
          "lost): the next run of {flow} found its lock free")


@task(name="crash-orphaned-runs", cache_policy=NO_CACHE)
def crash_orphans(flow_name: str) -> list[str]:
    """Mark the orphaned runs of ``flow_name`` ``CRASHED``; returns their ids. Best effort:
    a failure is logged and the run goes on (it has its own work to do)."""
    from prefect.runtime import flow_run

    current = str(flow_run.id) if flow_run.id else None
    try:
        return crash_orphaned_runs(flow_name, current=current,
                                   reason=REASON.format(flow=flow_name))
    except Exception as exc:
        log.warning("could not look for orphaned runs of %s (%s)", flow_name,
                    type(exc).__name__)
        return []

"""Flow runs left ``RUNNING`` by a process that died (``kill -9``, an OOM kill, a lost
machine): Prefect cannot tell, so the next run of the same flow says it.

A flow whose runs hold a database lock for their whole life (``index-rag-docs`` the index
lock, ``embeddings-switch`` the run lock) calls :func:`crash_orphaned_runs` once it holds
the lock: no other run of it can be alive then, wherever it ran, so every other run still
``RUNNING`` is an orphan and is marked ``CRASHED`` with the reason.
"""

from __future__ import annotations

import logging

log = logging.getLogger(__name__)


def crash_orphaned_runs(flow_name: str, *, current: str | None, reason: str) -> list[str]:
    """Mark every ``RUNNING`` flow run of ``flow_name`` but ``current`` as ``CRASHED``
    with ``reason``; returns their ids. Call it only while holding the flow's lock."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import (
        FlowFilter,
        FlowFilterName,
        FlowRunFilter,
        FlowRunFilterState,
        FlowRunFilterStateType,
    )
    from prefect.client.schemas.objects import StateType
    from prefect.states import Crashed

    running = FlowRunFilter(state=FlowRunFilterState(
        type=FlowRunFilterStateType(any_=[StateType.RUNNING])))
    crashed: list[str] = []
    with get_client(sync_client=True) as client:
        for run in client.read_flow_runs(
                flow_filter=FlowFilter(name=FlowFilterName(any_=[flow_name])),
                flow_run_filter=running):
            if str(run.id) == current:
                continue
            client.set_flow_run_state(run.id, Crashed(message=reason), force=True)
            log.warning("flow run %s (%s) of %s was left RUNNING by a process that is gone; "
                        "marked CRASHED", run.name, run.id, flow_name)
            crashed.append(str(run.id))
    return crashed

"""Flow runs left ``RUNNING`` by a process that died (``kill -9``, an OOM kill, a lost
machine): Prefect cannot tell, so the next run of the same flow says it.

A flow whose runs hold a database lock for their whole life (``index-rag-docs`` the index
lock, ``embeddings-switch`` the run lock) calls :func:`crash_orphaned_runs` once it holds
the lock: no other run of it can be alive then, wherever it ran, so every other run still
``RUNNING`` is an orphan and is marked ``CRASHED`` with the reason. A command that holds
the lock without starting a flow run (``index-docs`` over an up-to-date index) calls
:func:`crash_orphans_if_server_up`: it starts no Prefect server for it.
"""

from __future__ import annotations

import logging
import os

import httpx

from ragplate.catalog.settings import Settings
from ragplate.infra import prefect_server

log = logging.getLogger(__name__)

REASON = ("the process running this flow run died (killed, out of memory or its machine "
          "lost): the next run of {flow} found its lock free")


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


def crash_orphans(flow_name: str, *, current: str | None) -> list[str]:
    """:func:`crash_orphaned_runs` with :data:`REASON`, best effort: a failure is logged
    and an empty list returned (the caller has its own work to do)."""
    try:
        return crash_orphaned_runs(flow_name, current=current,
                                   reason=REASON.format(flow=flow_name))
    except Exception as exc:
        log.warning("could not look for orphaned runs of %s (%s)", flow_name,
                    type(exc).__name__)
        return []


def crash_orphans_if_server_up(settings: Settings, flow_name: str) -> list[str]:
    """:func:`crash_orphans` from a process holding the flow's lock outside any flow run,
    when the Prefect API answers already: none is started for it (a server that is not
    running holds no run to mark; the next flow run marks them). ``prefect`` is imported
    only when a run of ``flow_name`` is ``RUNNING``."""
    url = prefect_server.running_api_url(settings)
    if url is None or running_count(url, flow_name) == 0:
        return []
    try:
        with prefect_server.running_prefect_api(settings, url):
            return crash_orphans(flow_name, current=None)
    except Exception as exc:  # the settings of a Prefect that cannot be imported
        log.warning("could not look for orphaned runs of %s (%s)", flow_name,
                    type(exc).__name__)
        return []


def running_count(api_url: str, flow_name: str) -> int | None:
    """How many flow runs of ``flow_name`` the API at ``api_url`` holds ``RUNNING``, asked
    in one request without importing ``prefect``; ``None`` when it cannot tell."""
    body = {"flows": {"name": {"any_": [flow_name]}},
            "flow_runs": {"state": {"type": {"any_": ["RUNNING"]}}}}
    key = os.environ.get("PREFECT_API_KEY")
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    local = api_url.startswith("http://127.0.0.1:")
    try:
        # trust_env only for an external server: a proxy must not intercept loopback calls.
        response = httpx.post(f"{api_url.rstrip('/')}/flow_runs/count", json=body,
                              headers=headers, timeout=5.0, trust_env=not local)
        count = response.json() if response.status_code == 200 else None
    except (httpx.HTTPError, ValueError):
        return None
    return count if isinstance(count, int) else None

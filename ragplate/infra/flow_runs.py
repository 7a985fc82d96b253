"""Flow runs left ``RUNNING`` by a process that died (``kill -9``, an OOM kill, a lost
machine): Prefect cannot tell, so the next run of the same flow says it.

A flow whose runs may run side by side (an evaluation, a tuning, the analytics) cannot
tell by a lock: each of its runs tags itself with its process (:func:`process_tag`), and
:func:`crash_runs_of_gone_processes` marks a run ``CRASHED`` when its process, on this
machine, is gone. A run of another machine, or without the tag, is left as it is.

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
import socket
import uuid
from functools import lru_cache
from pathlib import Path
from typing import Any

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
    from prefect.states import Crashed

    crashed: list[str] = []
    with get_client(sync_client=True) as client:
        for run in client.read_flow_runs(**_running(flow_name)):
            if str(run.id) == current:
                continue
            client.set_flow_run_state(run.id, Crashed(message=reason), force=True)
            log.warning("flow run %s (%s) of %s was left RUNNING by a process that is gone; "
                        "marked CRASHED", run.name, run.id, flow_name)
            crashed.append(str(run.id))
    return crashed


#: The tag a run's process leaves on it: ``process:<host>:<machine>:<pid>:<start>``.
PROCESS_TAG = "process:"
GONE_REASON = ("the process running this flow run died (killed, out of memory): a later "
               "run of {flow} on the same machine found it gone")


def _start_time(pid: int) -> str:
    """When process ``pid`` started, in clock ticks since boot (``/proc``), so that a pid
    used again by another process is not taken for the run's; ``""`` where unknown."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return ""
    # The command name (field 2) may hold any byte, spaces and ")" too: count after the
    # last ")".
    fields = stat.rsplit(b")", 1)[-1].split()
    return fields[19].decode("ascii", "replace") if len(fields) > 19 else ""


@lru_cache(maxsize=1)
def _machine() -> str:
    """This boot of this kernel and this pid namespace: where a pid means one process. A
    host name alone does not say it (containers sharing the host's network share its
    name, each with its own pids); ``""`` where unknown."""
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text(encoding="ascii").strip()
        namespace = os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return ""
    return f"{boot.replace('-', '')[:12]}.{namespace}"


def process_tag(pid: int | None = None) -> str:
    """The tag naming this process (or ``pid``) on this machine."""
    pid = os.getpid() if pid is None else pid
    return f"{PROCESS_TAG}{socket.gethostname()}:{_machine()}:{pid}:{_start_time(pid)}"


def process_gone(tag: str) -> bool:
    """Whether the process a :func:`process_tag` names is gone: it ran here (this host,
    boot and pid namespace) and its pid is free, or now belongs to a process started at
    another time. Never for a tag of elsewhere, or one that cannot be read (nothing can be
    told from here)."""
    parts = tag.removeprefix(PROCESS_TAG).rsplit(":", 3)
    if (len(parts) != 4 or parts[0] != socket.gethostname() or not parts[1]
            or parts[1] != _machine() or not parts[2].isdigit()):
        return False
    pid, started = int(parts[2]), parts[3]
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # alive, another user's
        pass
    return bool(started) and _start_time(pid) not in ("", started)


def crash_runs_of_gone_processes(flow_name: str, *, current: str | None) -> list[str]:
    """Tag the ``current`` run with this process (in place of an earlier process's tag: a
    run retried from the UI runs again in another), then mark every other ``RUNNING`` run
    of ``flow_name`` whose process is gone (:func:`process_gone`) ``CRASHED``; their ids."""
    from prefect.client.orchestration import get_client
    from prefect.states import Crashed

    crashed: list[str] = []
    with get_client(sync_client=True) as client:
        if current is not None:
            run = client.read_flow_run(uuid.UUID(current))
            kept = [t for t in run.tags if not t.startswith(PROCESS_TAG)]
            client.update_flow_run(run.id, tags=[*kept, process_tag()])
        for run in client.read_flow_runs(**_running(flow_name)):
            tags = [t for t in run.tags if t.startswith(PROCESS_TAG)]
            if str(run.id) == current or not tags or not process_gone(tags[-1]):
                continue
            client.set_flow_run_state(run.id, Crashed(message=GONE_REASON.format(
                flow=flow_name)), force=True)
            log.warning("flow run %s (%s) of %s was left RUNNING by a process that is gone; "
                        "marked CRASHED", run.name, run.id, flow_name)
            crashed.append(str(run.id))
    return crashed


def crash_gone(flow_name: str, *, current: str | None) -> list[str]:
    """:func:`crash_runs_of_gone_processes`, best effort: a failure is logged and an empty
    list returned (the caller has its own work to do)."""
    try:
        return crash_runs_of_gone_processes(flow_name, current=current)
    except Exception as exc:
        log.warning("could not look for orphaned runs of %s (%s)", flow_name,
                    type(exc).__name__)
        return []


def _running(flow_name: str) -> dict[str, Any]:
    """The filters of the ``RUNNING`` runs of ``flow_name``."""
    from prefect.client.schemas.filters import (
        FlowFilter,
        FlowFilterName,
        FlowRunFilter,
        FlowRunFilterState,
        FlowRunFilterStateType,
    )
    from prefect.client.schemas.objects import StateType

    return {"flow_filter": FlowFilter(name=FlowFilterName(any_=[flow_name])),
            "flow_run_filter": FlowRunFilter(state=FlowRunFilterState(
                type=FlowRunFilterStateType(any_=[StateType.RUNNING])))}


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


def _api_client(api_url: str, timeout: float) -> httpx.Client:
    """A plain HTTP client of the Prefect API at ``api_url`` (``prefect`` not imported)."""
    key = os.environ.get("PREFECT_API_KEY")
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    # trust_env only for an external server: a proxy must not intercept loopback calls.
    return httpx.Client(base_url=api_url.rstrip("/"), headers=headers, timeout=timeout,
                        trust_env=not api_url.startswith("http://127.0.0.1:"))


def running_count(api_url: str, flow_name: str) -> int | None:
    """How many flow runs of ``flow_name`` the API at ``api_url`` holds ``RUNNING``, asked
    in one request without importing ``prefect``; ``None`` when it cannot tell."""
    body = {"flows": {"name": {"any_": [flow_name]}},
            "flow_runs": {"state": {"type": {"any_": ["RUNNING"]}}}}
    try:
        with _api_client(api_url, 5.0) as http:
            response = http.post("/flow_runs/count", json=body)
        count = response.json() if response.status_code == 200 else None
    except (httpx.HTTPError, ValueError):
        return None
    return count if isinstance(count, int) else None


KILLED_REASON = ("the worker was stopped and killed the process running this flow run "
                 "before it finished: run it again (a switch resumes where it stopped)")


def crash_killed_runs(api_url: str, run_ids: set[str], *,
                      reason: str = KILLED_REASON) -> list[str]:
    """Mark ``CRASHED`` each of ``run_ids`` still ``PENDING`` or ``RUNNING``: the flow runs
    whose processes a worker's supervisor has just killed (it read each run's id from its
    process's ``PREFECT__FLOW_RUN_ID``, so no run of another machine or container is
    touched); returns the ids marked. Plain HTTP, best effort: the supervisor does not
    import ``prefect``, and a failure only leaves the runs to the next run of their flow."""
    crashed: list[str] = []
    try:
        with _api_client(api_url, 10.0) as http:
            for run_id in sorted(run_ids):
                run = http.get(f"/flow_runs/{run_id}")
                if run.status_code != 200:
                    continue
                state = (run.json().get("state") or {}).get("type")
                if state not in ("PENDING", "RUNNING"):
                    continue  # it ended before the kill, or someone already marked it
                http.post(f"/flow_runs/{run_id}/set_state", json={
                    "state": {"type": "CRASHED", "name": "Crashed", "message": reason},
                    "force": True}).raise_for_status()
                crashed.append(run_id)
    except (httpx.HTTPError, ValueError) as exc:
        log.warning("could not mark the killed flow runs crashed (%s)", type(exc).__name__)
    return crashed

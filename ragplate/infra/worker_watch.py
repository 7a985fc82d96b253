"""A flow run started by ``ragplate worker`` ends when that worker is gone.

``ragplate worker`` names itself in the environment it gives Prefect's worker
(:data:`WORKER_PID`, :data:`WORKER_STARTED`), which every flow run it starts inherits. When
the worker is killed (``kill -9``, the OOM killer), Prefect's worker dies with it, but a
flow run's process lives in a session of its own and would go on unseen: one that logs
only from task threads (the embedding-model switch) kept writing for minutes, shown as
running, its switch refusing to be resumed. :func:`watch_worker`, every flow's first
statement (Prefect loads a deployment's flow file as a script, so no package import would
do), checks every :data:`INTERVAL` seconds in such a process that the worker is still
there; once it is gone, the run is marked crashed (best effort) and its process ends.
Anywhere else it does nothing.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Mapping

log = logging.getLogger(__name__)

#: The process id of the ``ragplate worker`` that started this flow run's worker.
WORKER_PID = "RAGPLATE_WORKER_PID"
#: Its start time (``psutil``'s ``create_time``), so a reused process id is not taken for it.
WORKER_STARTED = "RAGPLATE_WORKER_STARTED"
#: Seconds between two looks at the worker.
INTERVAL = 2.0
#: Why the run was marked crashed.
GONE_REASON = ("the ragplate worker that started this flow run is gone (killed): the run "
               "was ended; run it again (a switch resumes where it stopped)")

_started = threading.Event()


def worker_identity() -> dict[str, str]:
    """The variables naming this process as the worker of the flow runs it starts."""
    import psutil

    return {WORKER_PID: str(os.getpid()),
            WORKER_STARTED: repr(psutil.Process(os.getpid()).create_time())}


def worker_alive(pid: int, started: float) -> bool:
    """Whether the process ``pid`` runs and is the one started at ``started``."""
    import psutil

    try:
        process = psutil.Process(pid)
        return (abs(process.create_time() - started) < 0.01
                and process.status() != psutil.STATUS_ZOMBIE)
    except psutil.Error:
        return False


def watch_worker(environ: Mapping[str, str] = os.environ, *,
                 end: Callable[[int], None] = os._exit, interval: float = INTERVAL) -> bool:
    """In a flow run's process started by ``ragplate worker``, start (once) the thread that
    ends the process when that worker is gone; whether it watches."""
    run_id = environ.get("PREFECT__FLOW_RUN_ID")
    try:
        pid, started = int(environ[WORKER_PID]), float(environ[WORKER_STARTED])
    except (KeyError, ValueError):
        return False
    if not run_id or _started.is_set():
        return _started.is_set()
    _started.set()
    api_url = environ.get("PREFECT_API_URL")

    def watch() -> None:
        while worker_alive(pid, started):
            time.sleep(interval)
        log.error("the ragplate worker (process %d) that started flow run %s is gone: "
                  "ending the run", pid, run_id)
        if api_url:
            from ragplate.infra.flow_runs import crash_killed_runs

            crash_killed_runs(api_url, {run_id}, reason=GONE_REASON)
        end(1)

    threading.Thread(target=watch, name="ragplate-worker-watch", daemon=True).start()
    return True

"""The local Prefect server ragplate runs when ``PREFECT_API_URL`` is not set.

It is ``prefect server start`` on ``127.0.0.1:RAGPLATE_PREFECT_PORT``, detached so that the
API, CLI commands and workers sharing ``RAGPLATE_HOME`` share one instance (pid file in
``RAGPLATE_HOME/run``, log in ``RAGPLATE_HOME/logs``). Its state lives in the ``prefect``
database of ragplate's PostgreSQL: the embedded server, or the server behind
``RAGPLATE_DATABASE_URL``, where that database must already exist (ragplate creates it only
in the embedded server). Prefect's SQLite backend is never used: concurrent writers fail
with "database is locked". ``prefect`` is imported lazily: the import costs about 2 s.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import fasteners
import httpx
import psutil
from sqlalchemy.engine import make_url

from ragplate.catalog.errors import ServiceError
from ragplate.catalog.settings import Settings
from ragplate.infra import database, postgres
from ragplate.infra.home import ensure_dir
from ragplate.infra.ports import bind_error

PID_FILE = "prefect-server.pid"
LOG_FILE = "prefect-server.log"
LOCK_FILE = "prefect-server.lock"

# Children of this process are reaped through their Popen: an unreaped child stays a zombie
# and would look alive to stop() and status().
_children: dict[int, subprocess.Popen[bytes]] = {}
# fcntl locks are per process, so the threads of one process need a lock of their own.
_thread_lock = threading.RLock()


def external_api_url() -> str | None:
    """``PREFECT_API_URL`` from the environment: a Prefect server ragplate does not manage."""
    return os.environ.get("PREFECT_API_URL") or None


def local_api_url(settings: Settings) -> str:
    """API URL of the local server of ``settings``."""
    return f"http://127.0.0.1:{settings.prefect_port}/api"


def healthy(api_url: str, timeout: float = 2.0) -> bool:
    """True when ``api_url`` is a Prefect API answering its health check."""
    try:
        # trust_env=False: a proxy from the environment must not intercept loopback calls.
        response = httpx.get(f"{api_url.rstrip('/')}/health", timeout=timeout, trust_env=False)
        return response.status_code == 200 and response.json() is True
    except (httpx.HTTPError, ValueError):
        return False


def reachable(api_url: str, timeout: float = 5.0) -> bool:
    """Whether a Prefect API that ragplate does not manage can be reached at all: any HTTP
    answer counts (a hosted API may want credentials for ``/health``); only a failed
    connection or a timeout does not."""
    try:
        # trust_env: an external server may sit behind the environment's proxy.
        httpx.get(f"{api_url.rstrip('/')}/health", timeout=timeout, trust_env=True)
    except httpx.TransportError:
        return False
    return True


def prefect_database_url(settings: Settings) -> str:
    """asyncpg URL of the ``prefect`` database (password included); starts PostgreSQL."""
    url = database.database_url(settings)  # also creates the embedded `prefect` database
    if settings.database_url is None:
        return postgres.start(settings.home).url(postgres.PREFECT_DATABASE_NAME, driver="asyncpg")
    prefect_url = make_url(url).set(
        drivername="postgresql+asyncpg", database=postgres.PREFECT_DATABASE_NAME
    )
    return prefect_url.render_as_string(hide_password=False)


@contextmanager
def _locked(settings: Settings) -> Iterator[None]:
    ensure_dir(settings.run_dir)
    with _thread_lock, fasteners.InterProcessLock(str(settings.run_dir / LOCK_FILE)):
        yield


def _alive(pid: int) -> bool:
    child = _children.get(pid)
    if child is not None:
        return child.poll() is None
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _cmdline(pid: int) -> list[str]:
    try:
        return psutil.Process(pid).cmdline() if _alive(pid) else []
    except psutil.Error:
        return []


def _server_pid(settings: Settings) -> int | None:
    """Pid of the running server recorded in the pid file, if any."""
    try:
        pid = int((settings.run_dir / PID_FILE).read_text().strip())
    except (OSError, ValueError):
        return None
    # A stale pid file may name a pid the system has since given to another program (even
    # one with "prefect" in its command line): only this home's server counts.
    return pid if _is_our_server(pid, settings) else None


def _is_our_server(pid: int, settings: Settings) -> bool:
    """Whether ``pid`` runs ``python -m prefect server start`` with this home's
    ``PREFECT_HOME`` (when its environment can be read)."""
    command = " ".join(_cmdline(pid))
    if "-m prefect server start" not in command:
        return False
    try:
        environment = psutil.Process(pid).environ()
    except psutil.Error:
        return True  # not readable (another user): the command line has to do
    return environment.get("PREFECT_HOME") == str(settings.home / "prefect")


def _port_free(port: int) -> bool:
    return bind_error("127.0.0.1", port) is None


def _on_other_port(pid: int, settings: Settings) -> bool:
    """Whether our server ``pid`` was started before RAGPLATE_PREFECT_PORT changed (it
    listens elsewhere; :func:`start` replaces it)."""
    return str(settings.prefect_port) not in _cmdline(pid)


def _spawn(settings: Settings) -> int:
    url = local_api_url(settings)
    env = {
        key: value
        for key, value in os.environ.items()
        # An inherited API URL, profile or database would point the server elsewhere.
        if key not in ("PREFECT_API_URL", "PREFECT_API_KEY", "PREFECT_PROFILE")
        and not key.startswith(("PREFECT_SERVER_DATABASE_", "PREFECT_API_DATABASE_"))
    }
    env.update(
        PREFECT_HOME=str(settings.home / "prefect"),
        PREFECT_API_DATABASE_CONNECTION_URL=prefect_database_url(settings),
        PREFECT_SERVER_ANALYTICS_ENABLED="false",
        PREFECT_API_URL=url,
        PREFECT_UI_API_URL=url,
    )
    ensure_dir(settings.log_dir)
    ensure_dir(settings.home / "prefect")
    command = [sys.executable, "-m", "prefect", "server", "start"]
    command += ["--host", "127.0.0.1", "--port", str(settings.prefect_port)]
    with open(settings.log_dir / LOG_FILE, "ab") as log:
        process = subprocess.Popen(
            command,
            env=env,
            cwd=settings.home,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            # Own session: the server outlives this process and is stopped as a group.
            start_new_session=True,
        )
    _children[process.pid] = process
    (settings.run_dir / PID_FILE).write_text(f"{process.pid}\n")
    return process.pid


def _wait_healthy(settings: Settings, pid: int, timeout: float) -> str:
    url, log = local_api_url(settings), settings.log_dir / LOG_FILE
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if healthy(url, timeout=1.0):
            return url
        if not _alive(pid):
            _children.pop(pid, None)
            (settings.run_dir / PID_FILE).unlink(missing_ok=True)
            raise ServiceError(
                f"the Prefect server (pid {pid}) exited while starting on port "
                f"{settings.prefect_port}; see the last lines of {log}"
            )
        time.sleep(0.25)
    # Never leave a half-started server behind: the next start() would wait on it again.
    _stop_pid(settings, pid, timeout=10)
    raise ServiceError(
        f"the Prefect server (pid {pid}) was not healthy on port {settings.prefect_port} "
        f"after {timeout:.0f} s and was stopped; see the last lines of {log}"
    )


def start(settings: Settings, *, timeout: float = 90) -> str:
    """Ensure a Prefect API is available and return its URL.

    ``PREFECT_API_URL``, when set, is returned as is and nothing is started. Otherwise the
    local server is reused when it answers, or started and awaited for ``timeout`` seconds.
    """
    external = external_api_url()
    if external is not None:
        if not reachable(external):
            raise ServiceError(f"the Prefect API at {external} (PREFECT_API_URL) cannot be "
                               "reached; start that server, or unset PREFECT_API_URL to use "
                               "the embedded one")
        return external
    url = local_api_url(settings)
    with _locked(settings):
        if healthy(url):
            return url
        pid = _server_pid(settings)
        if pid is not None and _on_other_port(pid, settings):
            # Started before RAGPLATE_PREFECT_PORT changed: replace it rather than wait.
            _stop_pid(settings, pid, timeout=20)
            pid = None
        if pid is None:
            if not _port_free(settings.prefect_port):
                raise ServiceError(
                    f"port {settings.prefect_port} is in use by something that is not a "
                    "healthy Prefect server; free it or set RAGPLATE_PREFECT_PORT to "
                    "another port"
                )
            pid = _spawn(settings)
        # A recorded, live pid is a server still booting (its starter was interrupted):
        # wait for it rather than start a second one.
        return _wait_healthy(settings, pid, timeout)


def _group_alive(pgid: int) -> bool:
    for process in psutil.process_iter():
        try:
            if os.getpgid(process.pid) == pgid and _alive(process.pid):
                return True
        except (OSError, psutil.Error):
            continue
    return False


def _stop_pid(settings: Settings, pid: int, timeout: float) -> None:
    try:
        # The whole group, in case the server has helpers; a pid that does not lead its
        # own group was not started by us, so only that process is signalled.
        group = os.getpgid(pid) == pid
        kill = os.killpg if group else os.kill
        # SIGTERM, not SIGINT: the server ignores SIGINT for a long time.
        kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while (_group_alive(pid) if group else _alive(pid)) and time.monotonic() < deadline:
            time.sleep(0.2)
        if _group_alive(pid) if group else _alive(pid):
            kill(pid, signal.SIGKILL)
        if pid in _children:
            _children[pid].wait(timeout=5)
    except ProcessLookupError:
        pass
    finally:
        _children.pop(pid, None)
        (settings.run_dir / PID_FILE).unlink(missing_ok=True)


def stop(settings: Settings, timeout: float = 20) -> bool:
    """Stop the local server of ``settings``; ``False`` when it was not running."""
    with _locked(settings):
        pid = _server_pid(settings)
        if pid is None:
            (settings.run_dir / PID_FILE).unlink(missing_ok=True)
            return False
        _stop_pid(settings, pid, timeout)
        return True


def status(settings: Settings) -> dict[str, Any]:
    """``running``, ``pid``, ``url``, ``healthy`` and ``external``; starts nothing."""
    external = external_api_url()
    if external is not None:
        ok = healthy(external)
        return {"running": ok, "pid": None, "url": external, "healthy": ok, "external": True}
    pid, url = _server_pid(settings), local_api_url(settings)
    ok = pid is not None and healthy(url)
    return {"running": pid is not None, "pid": pid, "url": url, "healthy": ok, "external": False,
            "other_port": pid is not None and _on_other_port(pid, settings)}


@contextmanager
def prefect_api(settings: Settings, *, timeout: float = 90) -> Iterator[str]:
    """Ensure the server and make flows run in this process report to it; yields its URL."""
    # Prefect's analytics thread reads the environment, not the settings context below.
    os.environ["PREFECT_SERVER_ANALYTICS_ENABLED"] = "false"
    url = start(settings, timeout=timeout)
    from prefect import settings as ps

    updates = {ps.PREFECT_API_URL: url, ps.PREFECT_SERVER_ANALYTICS_ENABLED: False}
    with ps.temporary_settings(updates=updates):
        yield url

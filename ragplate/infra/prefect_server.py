"""The local Prefect server ragplate runs when ``PREFECT_API_URL`` is not set.

It is ``prefect server start`` on ``127.0.0.1:RAGPLATE_PREFECT_PORT``, detached so that the
API, CLI commands and workers sharing ``RAGPLATE_HOME`` share one instance (pid file in
``RAGPLATE_HOME/run``, log in ``RAGPLATE_HOME/logs``). When that port is held by anything
but this home's server (another home's Prefect server, another program), the server is
started on the next free port instead and the pid file records it: the pid file holds the
pid, the port listened on and the RAGPLATE_PREFECT_PORT it was started for, and every
process of the home finds the server there. Prefect's own files (its home, the results of
failed runs) live under ``RAGPLATE_HOME/prefect`` too, unless the operator set
``PREFECT_HOME`` (see :func:`ragplate.infra.home.prefect_home_environment`).

The server's state lives in the ``prefect`` database of ragplate's PostgreSQL: the embedded
server, or the server behind ``RAGPLATE_DATABASE_URL``, where that database must already
exist (ragplate creates it only in the embedded server). Prefect's SQLite backend is never
used: concurrent writers fail with "database is locked". ``prefect`` is imported lazily: the
import costs about 2 s.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from logging import getLogger
from pathlib import Path
from typing import Any

import fasteners
import httpx
import psutil
from sqlalchemy.engine import make_url

from ragplate.catalog.errors import ServiceError
from ragplate.catalog.settings import Settings
from ragplate.infra import database, postgres
from ragplate.infra.home import ensure_dir, use_home_for_prefect
from ragplate.infra.ports import bind_error

PID_FILE = "prefect-server.pid"
LOG_FILE = "prefect-server.log"
LOCK_FILE = "prefect-server.lock"

# Children of this process are reaped through their Popen: an unreaped child stays a zombie
# and would look alive to stop() and status().
_children: dict[int, subprocess.Popen[bytes]] = {}
# fcntl locks are per process, so the threads of one process need a lock of their own.
_thread_lock = threading.RLock()
#: Ports tried after RAGPLATE_PREFECT_PORT when something else holds it, before any free one.
FALLBACK_PORTS = 20

log = getLogger(__name__)


@dataclass(frozen=True)
class LocalServer:
    """This home's running server: its pid, the port it listens on and the
    ``RAGPLATE_PREFECT_PORT`` it was started for (another port when that one was taken)."""

    pid: int
    port: int
    requested: int


def external_api_url() -> str | None:
    """``PREFECT_API_URL`` from the environment: a Prefect server ragplate does not manage."""
    return os.environ.get("PREFECT_API_URL") or None


def api_url_on(port: int) -> str:
    """The API URL of a local server listening on ``port``."""
    return f"http://127.0.0.1:{port}/api"


def local_api_url(settings: Settings) -> str:
    """API URL of the local server of ``settings``: where this home's server listens (the
    port its pid file records), else where it would be started."""
    server = _recorded(settings)
    if server is not None and server.requested == settings.prefect_port:
        return api_url_on(server.port)
    return api_url_on(settings.prefect_port)


def ui_url(api_url: str) -> str | None:
    """The Prefect UI of an API URL: ``PREFECT_UI_URL`` when set, else the API URL without
    its ``/api`` (what a Prefect server serves); ``None`` when it cannot be told (a hosted
    API). ``…/api`` itself is the API: a browser gets a 404 page there."""
    explicit = os.environ.get("PREFECT_UI_URL")
    if explicit:
        return explicit
    base = api_url.rstrip("/")
    return base.removesuffix("/api") if base.endswith("/api") else None


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


def _recorded(settings: Settings) -> LocalServer | None:
    """This home's running server as its pid file records it, if any. The file holds the
    pid, then the port and the RAGPLATE_PREFECT_PORT it was started for (a file of an
    earlier version holds the pid alone: its port is read from the command line)."""
    try:
        fields = [int(line) for line in
                  (settings.run_dir / PID_FILE).read_text().split()]
    except (OSError, ValueError):
        return None
    if not fields:
        return None
    pid = fields[0]
    # A stale pid file may name a pid the system has since given to another program (even
    # one with "prefect" in its command line): only this home's server counts.
    if not _is_our_server(pid, settings):
        return None
    port = _cmdline_port(pid) or (fields[1] if len(fields) > 1 else settings.prefect_port)
    requested = fields[2] if len(fields) > 2 else port
    return LocalServer(pid, port, requested)


def _server_pid(settings: Settings) -> int | None:
    """Pid of this home's running server, recorded in the pid file or not."""
    server = _this_homes(settings)
    return None if server is None else server.pid


def _cmdline_port(pid: int) -> int | None:
    command = _cmdline(pid)
    try:
        return int(command[command.index("--port") + 1])
    except (ValueError, IndexError):
        return None


def _is_our_server(pid: int, settings: Settings, *, unrecorded: bool = False) -> bool:
    """Whether ``pid`` runs ``python -m prefect server start`` with this home's
    ``PREFECT_HOME``. When its environment cannot be read (another user's process), the
    command line has to do for the pid our pid file names, but not for an ``unrecorded``
    one merely listening on our port."""
    command = " ".join(_cmdline(pid))
    if "-m prefect server start" not in command:
        return False
    try:
        environment = psutil.Process(pid).environ()
    except psutil.Error:
        return not unrecorded
    return environment.get("PREFECT_HOME") == str(settings.home / "prefect")


def _port_free(port: int) -> bool:
    return bind_error("127.0.0.1", port) is None


def _free_port_after(port: int) -> int:
    """The first free port of the :data:`FALLBACK_PORTS` after ``port``, else any free one."""
    for candidate in range(port + 1, min(port + 1 + FALLBACK_PORTS, 65536)):
        if _port_free(candidate):
            return candidate
    from ragplate.infra.ports import free_port

    return free_port()


def _listener_pid(port: int) -> int | None:
    """The process listening on TCP ``port``, when the system lets us see it."""
    try:
        connections = psutil.net_connections(kind="tcp")
    except (psutil.Error, OSError):
        return None
    for connection in connections:
        if (connection.status == psutil.CONN_LISTEN and connection.laddr
                and connection.laddr.port == port and connection.pid):
            return int(connection.pid)
    return None


def port_holder(port: int) -> str:
    """Who holds ``port`` (not this home's server), in words for a message: another
    RAGPLATE_HOME's Prefect server named by its home and pid, another Prefect server, or
    another program."""
    pid = _listener_pid(port)
    if pid is None:
        if healthy(api_url_on(port), timeout=1.0):
            return "a Prefect server that is not this RAGPLATE_HOME's"
        return "another program"
    command = _cmdline(pid)
    if "prefect server start" in " ".join(command):
        try:
            prefect_home = psutil.Process(pid).environ().get("PREFECT_HOME", "")
        except psutil.Error:
            prefect_home = ""
        if prefect_home.endswith("/prefect"):
            return (f"the Prefect server of another RAGPLATE_HOME ({Path(prefect_home).parent}, "
                    f"pid {pid})")
        return f"a Prefect server that is not this RAGPLATE_HOME's (pid {pid})"
    name = Path(command[0]).name if command else "unknown"
    return f"another program ({name}, pid {pid})"


def _on_other_port(server: LocalServer, settings: Settings) -> bool:
    """Whether our server was started before RAGPLATE_PREFECT_PORT changed (it listens
    elsewhere for another setting; :func:`start` replaces it)."""
    return server.requested != settings.prefect_port


def _spawn(settings: Settings, port: int) -> int:
    url = api_url_on(port)
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
    env.setdefault("DO_NOT_TRACK", "1")  # Prefect's client-side telemetry (see prefect_api)
    ensure_dir(settings.log_dir)
    ensure_dir(settings.home / "prefect")
    command = [sys.executable, "-m", "prefect", "server", "start"]
    command += ["--host", "127.0.0.1", "--port", str(port)]
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
    (settings.run_dir / PID_FILE).write_text(
        f"{process.pid}\n{port}\n{settings.prefect_port}\n")
    return process.pid


def _wait_healthy(settings: Settings, pid: int, port: int, timeout: float) -> str:
    url, log = api_url_on(port), settings.log_dir / LOG_FILE
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if healthy(url, timeout=1.0):
            return url
        if not _alive(pid):
            _children.pop(pid, None)
            (settings.run_dir / PID_FILE).unlink(missing_ok=True)
            raise ServiceError(
                f"the Prefect server (pid {pid}) exited while starting on port "
                f"{port}; see the last lines of {log}"
            )
        time.sleep(0.25)
    # Never leave a half-started server behind: the next start() would wait on it again.
    _stop_pid(settings, pid, timeout=10)
    raise ServiceError(
        f"the Prefect server (pid {pid}) was not healthy on port {port} "
        f"after {timeout:.0f} s and was stopped; see the last lines of {log}"
    )


def start(settings: Settings, *, timeout: float = 90, announce: bool = True) -> str:
    """Ensure a Prefect API is available and return its URL.

    ``PREFECT_API_URL``, when set, is returned as is and nothing is started. Otherwise this
    home's server is reused when it runs (or awaited while it boots), or started and
    awaited for ``timeout`` seconds: on RAGPLATE_PREFECT_PORT, or, when anything else holds
    that port (another home's Prefect server included: it is never used nor replaced), on
    the next free port, with a warning naming both (unless not ``announce``: the caller
    says it).
    """
    external = external_api_url()
    if external is not None:
        if not reachable(external):
            raise ServiceError(f"the Prefect API at {external} (PREFECT_API_URL) cannot be "
                               "reached; start that server, or unset PREFECT_API_URL to use "
                               "the embedded one")
        return external
    with _locked(settings):
        server = _recorded(settings)
        if server is not None and _on_other_port(server, settings):
            # Started before RAGPLATE_PREFECT_PORT changed: replace it rather than wait.
            _stop_pid(settings, server.pid, timeout=20)
            server = None
        if server is None:
            server = _adopt(settings)
        if server is not None:
            url = api_url_on(server.port)
            if healthy(url):
                return url
            # A recorded, live pid is a server still booting (its starter was
            # interrupted): wait for it rather than start a second one.
            return _wait_healthy(settings, server.pid, server.port, timeout)
        port = settings.prefect_port
        if not _port_free(port):
            holder = port_holder(port)
            port = _free_port_after(port)
            if announce:
                log.warning("port %s is held by %s: this home's Prefect server starts on "
                            "port %s (UI http://127.0.0.1:%s)", settings.prefect_port, holder,
                            port, port)
        pid = _spawn(settings, port)
        return _wait_healthy(settings, pid, port, timeout)


def _unrecorded(settings: Settings) -> LocalServer | None:
    """This home's server listening on RAGPLATE_PREFECT_PORT although its pid file is
    missing or emptied: it is this home's, not someone else's."""
    pid = _listener_pid(settings.prefect_port)
    if pid is None or not _is_our_server(pid, settings, unrecorded=True):
        return None
    return LocalServer(pid, settings.prefect_port, settings.prefect_port)


def _this_homes(settings: Settings) -> LocalServer | None:
    """This home's running server: the pid file's, else one on RAGPLATE_PREFECT_PORT whose
    pid file was removed or emptied."""
    return _recorded(settings) or _unrecorded(settings)


def _adopt(settings: Settings) -> LocalServer | None:
    """This home's server listening without a pid file (:func:`_unrecorded`), recorded
    again rather than taken for someone else's."""
    server = _unrecorded(settings)
    if server is not None:
        (settings.run_dir / PID_FILE).write_text(
            f"{server.pid}\n{server.port}\n{server.requested}\n")
    return server


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
    """``running``, ``pid``, ``url`` (the API), ``ui_url``, ``port``, ``healthy``,
    ``external``, ``other_port`` (started for another RAGPLATE_PREFECT_PORT) and ``holder``
    (who holds RAGPLATE_PREFECT_PORT when it is not this home's server, else ``None``);
    starts nothing."""
    external = external_api_url()
    if external is not None:
        ok = healthy(external)
        return {"running": ok, "pid": None, "url": external, "ui_url": ui_url(external),
                "port": None, "healthy": ok, "external": True, "other_port": False,
                "holder": None}
    server = _this_homes(settings)
    port = settings.prefect_port if server is None else server.port
    url = api_url_on(port)
    holder = None
    if server is None or server.port != settings.prefect_port:
        holder = None if _port_free(settings.prefect_port) else port_holder(
            settings.prefect_port)
    return {"running": server is not None, "pid": None if server is None else server.pid,
            "url": url,
            "ui_url": ui_url(url), "port": port,
            "healthy": server is not None and healthy(url), "external": False,
            "other_port": server is not None and _on_other_port(server, settings),
            "holder": holder}


def run_settings(url: str, chosen: Mapping[str, str],
                 environ: Mapping[str, str]) -> dict[Any, Any]:
    """Prefect's settings for flows run in this process: the server at ``url``, no
    analytics, the homes ``chosen`` under RAGPLATE_HOME, and no heartbeat unless the
    operator set its interval in ``environ``."""
    from prefect import settings as ps

    updates: dict[Any, Any] = {ps.PREFECT_API_URL: url, ps.PREFECT_SERVER_ANALYTICS_ENABLED: False}
    if not HEARTBEAT_VARIABLES & set(environ):
        # A flow's heartbeat thread sleeps in one-second steps and is joined at the end of
        # the run: half a second on average added to every command-line run. Prefect acts
        # on heartbeats only through an automation the operator configures, so the command
        # line sends none unless the operator sets the interval; ragplate marks a run that
        # a killed process left Running as Crashed at the next run (crash_orphans).
        updates[ps.PREFECT_FLOWS_HEARTBEAT_FREQUENCY] = None
    if "PREFECT_HOME" in chosen:
        updates[ps.PREFECT_HOME] = Path(chosen["PREFECT_HOME"])
    if "PREFECT_RESULTS_LOCAL_STORAGE_PATH" in chosen:
        updates[ps.PREFECT_RESULTS_LOCAL_STORAGE_PATH] = Path(
            chosen["PREFECT_RESULTS_LOCAL_STORAGE_PATH"])
    return updates


#: Prefect's settings of the flow heartbeat interval (the second is its legacy name).
HEARTBEAT_VARIABLES = frozenset({"PREFECT_FLOWS_HEARTBEAT_FREQUENCY",
                                 "PREFECT_RUNNER_HEARTBEAT_FREQUENCY"})


@contextmanager
def prefect_api(settings: Settings, *, timeout: float = 90) -> Iterator[str]:
    """Ensure the server and make flows run in this process report to it; yields its URL.

    Flows run here write Prefect's files (the result of a failed run) under
    ``RAGPLATE_HOME/prefect`` unless the operator chose another Prefect home, even when
    ``prefect`` was imported before this home was known."""
    chosen = _prepare(settings)
    url = start(settings, timeout=timeout)
    with _reporting_to(url, chosen):
        yield url


@contextmanager
def running_prefect_api(settings: Settings, url: str) -> Iterator[str]:
    """As :func:`prefect_api`, for the server at ``url`` that :func:`running_api_url`
    found up: nothing is started (``prefect`` is imported, about 2 s)."""
    with _reporting_to(url, _prepare(settings)):
        yield url


def running_api_url(settings: Settings) -> str | None:
    """The URL of the Prefect API this home uses when it answers now, else ``None``; starts
    nothing and imports no ``prefect``: ``PREFECT_API_URL`` when it can be reached, else
    this home's server when it runs for RAGPLATE_PREFECT_PORT and is healthy."""
    external = external_api_url()
    if external is not None:
        return external if reachable(external, timeout=2.0) else None
    server = _this_homes(settings)
    if server is None or _on_other_port(server, settings):
        return None
    url = api_url_on(server.port)
    return url if healthy(url, timeout=1.0) else None


def _prepare(settings: Settings) -> dict[str, str]:
    # Prefect's analytics thread reads the environment, not the settings context below;
    # DO_NOT_TRACK turns off its client-side telemetry too (and its notice on a terminal),
    # unless the operator set it.
    os.environ["PREFECT_SERVER_ANALYTICS_ENABLED"] = "false"
    os.environ.setdefault("DO_NOT_TRACK", "1")
    return use_home_for_prefect(settings.home)


@contextmanager
def _reporting_to(url: str, chosen: Mapping[str, str]) -> Iterator[None]:
    from prefect import settings as ps

    updates = run_settings(url, chosen, os.environ)
    with ps.temporary_settings(updates=updates):
        yield

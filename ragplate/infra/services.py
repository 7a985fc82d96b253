"""Start, stop and inspect the services ragplate depends on: PostgreSQL, then Prefect.

A service configured from outside (``RAGPLATE_DATABASE_URL``, ``PREFECT_API_URL``) is
"external": it is only checked, never started or stopped.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from urllib.parse import unquote

import sqlalchemy as sa
from sqlalchemy.engine import make_url
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.pool import NullPool

from ragplate.catalog.errors import ServiceError
from ragplate.catalog.settings import Settings
from ragplate.infra import database, postgres, prefect_server

POSTGRES = "postgresql"
PREFECT = "prefect"


@dataclass(frozen=True)
class ServiceState:
    """What one service is doing; ``url`` never contains a password. For Prefect ``url`` is
    the UI (what a browser opens) and ``api_url`` the API (``…/api``: what
    ``PREFECT_API_URL`` takes, a 404 page in a browser)."""

    name: str
    running: bool
    url: str | None = None
    pid: int | None = None
    detail: str = ""
    api_url: str | None = None


def _safe(url: str) -> str:
    # Unquoted for reading: the socket directory would otherwise show as %2Ftmp%2F...
    return unquote(make_url(url).render_as_string(hide_password=True))


def _external_postgres(settings: Settings) -> ServiceState:
    url = database.database_url(settings)
    engine = sa.create_engine(url, poolclass=NullPool, connect_args={"connect_timeout": 5})
    try:
        with engine.connect() as conn:
            conn.execute(sa.text("SELECT 1"))
    except SQLAlchemyError as exc:
        reason = str(getattr(exc, "orig", None) or exc).strip().splitlines()
        detail = f"external, unreachable: {reason[0] if reason else type(exc).__name__}"
        return ServiceState(POSTGRES, False, _safe(url), None, detail)
    finally:
        engine.dispose()
    return ServiceState(POSTGRES, True, _safe(url), None, "external")


def _embedded_postgres(settings: Settings, detail: str) -> ServiceState:
    server = postgres.running(settings.home)
    if server is None:
        return ServiceState(POSTGRES, False, None, None, detail or "stopped")
    return ServiceState(POSTGRES, True, _safe(server.url()), server.pid, detail or "embedded")


def _prefect(settings: Settings, detail: str = "") -> ServiceState:
    info = prefect_server.status(settings)
    ui, api = info["ui_url"], info["url"]
    if info["external"]:
        detail = "external" if info["healthy"] else "external, not answering its health check"
        return ServiceState(PREFECT, info["healthy"], ui, None, detail, api)
    configured, holder = settings.prefect_port, info["holder"]
    if not info["running"]:
        if holder is not None:
            # Someone else's server (or program) on our port: never shown as ours.
            detail = (f"{detail or 'stopped'}; port {configured} is held by {holder}: "
                      "`ragplate up` starts this home's server on a free port")
            return ServiceState(PREFECT, False, None, None, detail)  # its URL is not ours
        return ServiceState(PREFECT, False, ui, None, detail or "stopped", api)
    if info.get("other_port"):
        return ServiceState(PREFECT, True, ui, info["pid"],
                            "listening on another port (RAGPLATE_PREFECT_PORT changed): "
                            "`ragplate up` replaces it", api)
    if not info["healthy"]:
        detail = f"{detail}, not healthy yet" if detail else "not healthy yet"
    detail = detail or "running"
    if info["port"] != configured:
        detail += (f" on port {info['port']}: port {configured} is held by {holder}" if holder
                   else f" on port {info['port']} (port {configured} was taken when it started)")
    return ServiceState(PREFECT, True, ui, info["pid"], detail, api)


def up(settings: Settings) -> list[ServiceState]:
    """Start (or attach to) PostgreSQL, then the Prefect server; external ones are checked."""
    if settings.database_url is not None:
        pg = _external_postgres(settings)
    else:
        was_running = postgres.running(settings.home) is not None
        database.database_url(settings)  # starts the server and creates its databases
        pg = _embedded_postgres(settings, "embedded, " + ("running" if was_running else "started"))
    if prefect_server.external_api_url() is not None:
        return [pg, _prefect(settings)]
    if not pg.running:
        # The local Prefect server keeps its state in PostgreSQL: it could not start.
        return [pg, _prefect(settings, "not started: PostgreSQL is unavailable")]
    before = prefect_server.status(settings)
    was_running = before["running"] and not before.get("other_port")
    prefect_server.start(settings, announce=False)  # the state's detail names the port
    return [pg, _prefect(settings, "running" if was_running else "started")]


def runs_in_progress(settings: Settings) -> list[str]:
    """The runs writing to this home's embedded database now: an ``index-docs`` run or a
    switch, told by the advisory locks they hold (none when the server is not running, or
    the database is an external one, which ``down`` leaves running)."""
    if settings.database_url is not None:
        return []
    server = postgres.running(settings.home)
    if server is None:
        return []
    from ragplate.infra import locks

    engine = sa.create_engine(server.url(), poolclass=NullPool)
    try:
        found = []
        if locks.held(engine, locks.INDEX_LOCK):
            found.append("an index-docs run")
        if locks.run_lock_held(engine):
            found.append("an embedding switch")
        return found
    except SQLAlchemyError:
        return []  # a server that does not answer holds no run worth waiting for
    finally:
        engine.dispose()


def down(settings: Settings, *, force: bool = False) -> list[ServiceState]:
    """Stop the Prefect server, then PostgreSQL; external services are left running. A run
    writing to the embedded database (:func:`runs_in_progress`) is a :class:`ServiceError`
    unless ``force``: stopped under it, it fails after its retries."""
    running_now = [] if force else runs_in_progress(settings)
    if running_now:
        verb = "are" if len(running_now) > 1 else "is"
        raise ServiceError(f"{' and '.join(running_now)} {verb} writing to this home's database: "
                           "wait for it to end, or stop the services anyway with `ragplate "
                           "down --force` (the run then fails; run it again, or resume the "
                           "switch, after `ragplate up`)")
    if prefect_server.external_api_url() is not None:
        prefect = _prefect(settings)
    else:
        stopped = prefect_server.stop(settings)
        prefect = _prefect(settings, "stopped" if stopped else "not running")
    if settings.database_url is not None:
        return [_external_postgres(settings), prefect]
    # Pooled connections would keep the server busy during its fast shutdown. Only this
    # server's engine: engines of other databases in this process stay usable.
    server = postgres.running(settings.home)
    if server is not None:
        database.dispose(server.url())
    stopped = postgres.stop(settings.home)
    return [_embedded_postgres(settings, "stopped" if stopped else "not running"), prefect]


def status(settings: Settings) -> list[ServiceState]:
    """The state of both services; never starts anything."""
    if settings.database_url is not None:
        pg = _external_postgres(settings)
    else:
        pg = _embedded_postgres(settings, "")
    prefect = _prefect(settings)
    if prefect.running and not pg.running and prefect_server.external_api_url() is None:
        # The process answers its health check, but its state lives in PostgreSQL.
        down = ("its database (PostgreSQL, RAGPLATE_DATABASE_URL) cannot be reached: flow "
                "runs fail until it can" if settings.database_url is not None else
                "its database (PostgreSQL) is down: flow runs fail until `ragplate up`")
        prefect = replace(prefect, detail=f"{prefect.detail}; {down}")
    return [pg, prefect]

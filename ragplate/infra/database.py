"""Connections to ragplate's PostgreSQL: the embedded one or ``RAGPLATE_DATABASE_URL``."""

from __future__ import annotations

import threading
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
    """A pooled engine for ``settings``; the schema is migrated on first use."""
    url = database_url(settings)
    with _lock:
        engine = _engines.get(url)
        if engine is None:
            engine = sa.create_engine(url, pool_pre_ping=True, pool_size=5, max_overflow=5)
            try:
                ensure_pgvector(engine)
                if migrate:
                    upgrade(engine)
            except BaseException:
                engine.dispose()
                raise
            _engines[url] = engine
    return engine


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
        opts = {"version_table": "ragplate_alembic_version"}
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

"""The PostgreSQL store of documentation query analytics (table ``rag_queries``).

Every function first asks whether the store exists: one an operator dropped makes the
deletions no-ops (``0``) and the recorder's writes errors it logs, never a crash of the
answer path.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from ragplate.catalog.analytics import check_fields
from ragplate.catalog.schema import rag_queries


def store_exists(conn: Connection) -> bool:
    """Whether the ``rag_queries`` table exists."""
    return conn.execute(sa.text("SELECT to_regclass('rag_queries') IS NOT NULL")).scalar_one()


def create_store(engine: Engine, *, force: bool) -> bool:
    """Create the store; with ``force`` drop it first (its records are lost). Whether it
    was created (``False``: it existed and ``force`` was not given)."""
    with engine.begin() as conn:
        exists = store_exists(conn)
        if exists and not force:
            return False
        if exists:
            rag_queries.drop(conn)
        rag_queries.create(conn)
    return True


def insert_record(engine: Engine, record: Mapping[str, Any]) -> None:
    """Write one record; a field outside the field set is refused before anything is sent
    (:class:`~ragplate.catalog.analytics.AnalyticsFieldError`)."""
    check_fields(dict(record))
    with engine.begin() as conn:
        conn.execute(rag_queries.insert().values(**record))


def delete_before(engine: Engine, cutoff: datetime) -> int:
    """Delete the records logged before ``cutoff``; how many (0 without a store)."""
    with engine.begin() as conn:
        if not store_exists(conn):
            return 0
        result = conn.execute(rag_queries.delete().where(rag_queries.c.logged_at < cutoff))
        return int(result.rowcount or 0)


def delete_refs(engine: Engine, refs: Sequence[str]) -> int:
    """Delete the records of any of ``refs``; how many (0 without a store)."""
    with engine.begin() as conn:
        if not store_exists(conn) or not refs:
            return 0
        result = conn.execute(rag_queries.delete().where(rag_queries.c.user_ref.in_(list(refs))))
        return int(result.rowcount or 0)


def read_records(engine: Engine, *, since: datetime | None) -> list[dict[str, Any]]:
    """The records logged from ``since`` on (every one: ``None``), oldest first; ``[]``
    without a store."""
    with engine.connect() as conn:
        if not store_exists(conn):
            return []
        query = sa.select(rag_queries).order_by(rag_queries.c.logged_at)
        if since is not None:
            query = query.where(rag_queries.c.logged_at >= since)
        return [dict(r) for r in conn.execute(query).mappings()]

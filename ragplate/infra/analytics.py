"""The store of documentation query analytics: the :class:`QueryLog` protocol, chosen by
:func:`make_query_log`, and its PostgreSQL implementation (table ``rag_queries``); the
Elasticsearch one is :mod:`ragplate.infra.es_analytics`.

A record is written only while its person still exists (:meth:`QueryLog.insert`): the API
hands records to a background writer, so an erasure (``users delete``, ``analytics
erase``) may run before a record it should have deleted is written; refusing the write of a
person who is gone keeps their questions from coming back.

Every function first asks whether the store exists: one an operator dropped makes the
deletions no-ops (``0``) and the recorder's writes errors it logs, never a crash of the
answer path.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from ragplate.catalog.analytics import check_fields
from ragplate.catalog.schema import rag_queries, users

if TYPE_CHECKING:
    from ragplate.catalog.settings import Settings


@runtime_checkable
class QueryLog(Protocol):
    """Where query records are kept: written by the recorder, deleted by retention and
    erasure, read by the corpus-gap report only. A record holds exactly
    :data:`~ragplate.catalog.analytics.FIELDS`; any other field is refused."""

    name: str

    def create(self, *, force: bool) -> bool:
        """Create the store; with ``force`` drop it first (its records are lost). Whether
        it was created (``False``: it existed and ``force`` was not given)."""

    def insert(self, record: Mapping[str, Any], *, user_id: int) -> bool:
        """Write one record of the person ``user_id`` unless that person no longer exists
        (erased with them: nothing written); whether it was written. A field outside the
        field set is refused, nothing written. ``user_id`` is never stored."""

    def delete_before(self, cutoff: datetime) -> int:
        """Delete the records logged before ``cutoff``; how many (0 without a store)."""

    def delete_refs(self, refs: Sequence[str]) -> int:
        """Delete the records of any of ``refs``; how many (0 without a store)."""

    def read(self, *, since: datetime | None) -> list[dict[str, Any]]:
        """The records logged from ``since`` on, oldest first (``[]`` without a store)."""


class PostgresQueryLog:
    """:class:`QueryLog` on the PostgreSQL table ``rag_queries``."""

    name = "rag_queries"

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def create(self, *, force: bool) -> bool:
        """See :class:`QueryLog`."""
        return create_store(self.engine, force=force)

    def insert(self, record: Mapping[str, Any], *, user_id: int) -> bool:
        """See :class:`QueryLog`."""
        with self.engine.begin() as conn:
            return insert_if_person(conn, record, user_id=user_id)

    def delete_before(self, cutoff: datetime) -> int:
        """See :class:`QueryLog`."""
        return delete_before(self.engine, cutoff)

    def delete_refs(self, refs: Sequence[str]) -> int:
        """See :class:`QueryLog`."""
        return delete_refs(self.engine, refs)

    def read(self, *, since: datetime | None) -> list[dict[str, Any]]:
        """See :class:`QueryLog`."""
        return read_records(self.engine, since=since)


def make_query_log(settings: Settings, engine: Engine | None, *,
                   person_exists: Callable[[int], bool] | None = None) -> QueryLog:
    """The configured store: the ``{app}_rag_queries`` Elasticsearch index when
    ``RAGPLATE_ELASTICSEARCH_URL`` is set, else the PostgreSQL table of ``engine``.
    ``person_exists`` (default: asked of ``engine``) is how the Elasticsearch store checks
    a person before writing their record; without either it writes nothing."""
    if settings.uses_elasticsearch:
        from ragplate.infra.es_analytics import ElasticsearchQueryLog

        if person_exists is None and engine is not None:
            person_exists = partial(person_exists_in, engine)
        return ElasticsearchQueryLog.from_settings(settings, person_exists=person_exists)
    if engine is None:
        from ragplate.infra.database import get_engine

        engine = get_engine(settings)
    return PostgresQueryLog(engine)


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


def person_exists_in(engine: Engine, user_id: int) -> bool:
    """Whether the person ``user_id`` still exists (the Elasticsearch store's check)."""
    with engine.connect() as conn:
        return conn.execute(sa.select(sa.exists().where(users.c.id == user_id))).scalar_one()


def insert_if_person(conn: Connection, record: Mapping[str, Any], *, user_id: int) -> bool:
    """Write one record only while the person ``user_id`` exists; whether it was written.

    One statement, ``INSERT … SELECT … WHERE EXISTS (… FOR KEY SHARE)``: the person's row is
    locked until the transaction ends, so a concurrent ``DELETE`` of them either waits for
    the record (and the erasure after it sees it) or commits first (and nothing is
    written). A field outside the field set is refused before anything is sent."""
    check_fields(dict(record))
    names = list(record)
    values = [sa.literal(record[n], type_=rag_queries.c[n].type).label(n) for n in names]
    alive = (sa.select(sa.literal(1)).select_from(users).where(users.c.id == user_id)
             .with_for_update(read=True, key_share=True))
    query = sa.select(*values).where(sa.exists(alive))
    written = conn.execute(rag_queries.insert().from_select(names, query)
                           .returning(rag_queries.c.id)).first()
    return written is not None


def insert_record(engine: Engine, record: Mapping[str, Any]) -> None:
    """Write one record whoever it refers to: for seeding and tests; the API writes with
    :func:`insert_if_person`. A field outside the field set is refused before anything is
    sent (:class:`~ragplate.catalog.analytics.AnalyticsFieldError`)."""
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

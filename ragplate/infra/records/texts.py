"""Reading the searchable texts of an entity's records (the statements are :mod:`.sql`'s).

A *text* is one searchable record in one locale: its text fields joined by a blank line,
identified by ``(entity, record_key, locale)`` and fingerprinted by the SHA-256 of the
text. A vector row of a model is current when it carries that hash; anything else is
*missing*. Only searchable records (status among the entity's ``searchable_statuses``)
have texts. The embedding-model switch walks an entity in key ranges (:func:`key_ranges`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from sqlalchemy.engine import Connection

from ragplate.catalog.entities import Entity
from ragplate.infra.records import sql
from ragplate.infra.records.sql import Key


@dataclass(frozen=True)
class RecordText:
    """One searchable record's text in one locale, as it is embedded."""

    entity: str
    record_key: str
    locale: str
    text: str
    text_hash: str


@dataclass(frozen=True)
class KeyRange:
    """Records with ``key_from <= key < key_to``; ``None`` leaves that end open."""

    key_from: str | None
    key_to: str | None


def _texts(conn: Connection, entity: Entity, query: sql.Query) -> list[RecordText]:
    return [RecordText(entity.name, r.record_key, r.locale, r.text, r.text_hash)
            for r in sql.fetch(conn, query)]


def record_texts(
    conn: Connection,
    entity: Entity,
    *,
    key_from: Key | None = None,
    key_to: Key | None = None,
    keys: Sequence[Key] | None = None,
) -> list[RecordText]:
    """The searchable texts of ``entity`` in key order (then locale), restricted to
    ``key_from <= key < key_to`` and/or to ``keys`` when given. Records with no text in a
    locale (every field empty) have no text there."""
    return _texts(conn, entity, sql.texts_query(entity, key_from=key_from, key_to=key_to,
                                                keys=keys))


def missing_embeddings(
    conn: Connection,
    entity: Entity,
    model_key: str,
    *,
    key_from: Key | None = None,
    key_to: Key | None = None,
    keys: Sequence[Key] | None = None,
) -> list[RecordText]:
    """Like :func:`record_texts`, but only the texts that have no row of ``model_key``
    with their current text hash (never embedded, or edited since)."""
    return _texts(conn, entity, sql.texts_query(entity, key_from=key_from, key_to=key_to,
                                                keys=keys, missing_for=model_key))


@dataclass(frozen=True)
class SearchDocument:
    """One searchable record in one locale as an application-search index holds it."""

    record_key: str
    locale: str
    tenant: str
    title: str
    body: str
    text_hash: str
    #: The current vector of the model asked for; ``None`` when it has none yet.
    embedding: np.ndarray | None


def search_documents(
    conn: Connection,
    entity: Entity,
    *,
    model_key: str,
    key_from: Key | None = None,
    key_to: Key | None = None,
    keys: Sequence[Key] | None = None,
) -> list[SearchDocument]:
    """The search documents of ``entity``'s searchable texts (see
    :func:`ragplate.infra.records.sql.search_documents_query`), in key order."""
    query = sql.search_documents_query(entity, model_key=model_key, key_from=key_from,
                                       key_to=key_to, keys=keys)
    return [SearchDocument(r.record_key, r.locale, r.tenant, r.title or "", r.body or "",
                           r.text_hash, None if r.embedding is None else
                           np.asarray(json.loads(r.embedding), dtype=np.float32))
            for r in sql.fetch(conn, query)]


def count_texts(conn: Connection, entity: Entity) -> int:
    """Searchable texts of ``entity``: what a full re-embedding costs."""
    return int(sql.fetch(conn, sql.count_texts_query(entity))[0][0])


def key_ranges(conn: Connection, entity: Entity, *, chunk_size: int) -> list[KeyRange]:
    """Consecutive ranges of ``chunk_size`` searchable records in key order, covering every
    key: the first range is open below and the last open above, so a record created later
    still falls in exactly one range. No records: one range open at both ends."""
    if chunk_size < 1:
        raise ValueError("chunk_size must be at least 1")
    query = sql.key_boundaries_query(entity, chunk_size=chunk_size)
    bounds: list[str | None] = [None, *(str(row[0]) for row in sql.fetch(conn, query))]
    return [KeyRange(bounds[i], bounds[i + 1] if i + 1 < len(bounds) else None)
            for i in range(len(bounds))]

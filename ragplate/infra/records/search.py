"""Application search reads: the keyword and vector rankings of an entity's searchable
records (the statements are :mod:`.sql`'s ``keyword_query`` and ``vector_query``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from sqlalchemy.engine import Connection

from ragplate.catalog.entities import Entity
from ragplate.catalog.profiles import EmbeddingProfile
from ragplate.infra.records import sql


@dataclass(frozen=True)
class RecordHit:
    """One record in the requested locale, with its score (higher is better)."""

    record_key: str
    title: str
    body: str
    locale: str
    score: float


def keyword_hits(conn: Connection, entity: Entity, *, query: str, locale: str,
                 tenants: Sequence[str] | None, limit: int) -> list[RecordHit]:
    """Full-text ranking of the searchable records' texts in ``locale``, best first."""
    statement = sql.keyword_query(entity, query=query, locale=locale, tenants=tenants,
                                  limit=limit)
    return [RecordHit(r.record_key, r.title, r.body, r.locale, float(r.score))
            for r in sql.fetch(conn, statement)]


def vector_hits(conn: Connection, entity: Entity, *, profile: EmbeddingProfile,
                vector: np.ndarray, locale: str, tenants: Sequence[str] | None,
                limit: int, excluded: str = "") -> list[RecordHit]:
    """The ``limit`` nearest vectors of ``profile``, one hit per vector (a record can
    appear once per locale it has), in the order the index returned them; a vector with no
    direction scores 0. Records holding a word of ``excluded`` are left out."""
    statement = sql.vector_query(entity, profile=profile, vector=vector, locale=locale,
                                 tenants=tenants, limit=limit, excluded=excluded)
    return [RecordHit(r.record_key, r.title, r.body, r.locale, float(np.nan_to_num(r.score)))
            for r in sql.fetch(conn, statement)]


def similarities(conn: Connection, entity: Entity, *, profile: EmbeddingProfile,
                 vector: np.ndarray, keys: Sequence[str]) -> dict[str, float]:
    """``{record key: best similarity to vector}`` of ``keys`` (absent: no vector)."""
    if not keys:
        return {}
    statement = sql.similarity_query(entity, profile=profile, vector=vector, keys=keys)
    return {str(r.record_key): float(np.nan_to_num(r.score)) for r in sql.fetch(conn, statement)}


def explain_vector_hits(conn: Connection, entity: Entity, *, profile: EmbeddingProfile,
                        vector: np.ndarray, locale: str, tenants: Sequence[str] | None,
                        limit: int) -> str:
    """The PostgreSQL plan of :func:`vector_hits` (for diagnosis and tests)."""
    return sql.explain(conn, sql.vector_query(entity, profile=profile, vector=vector,
                                              locale=locale, tenants=tenants, limit=limit))

"""Vectors of application records in ``model_embeddings``, and their per-model HNSW indexes.

The ``embedding`` column has no fixed length, so rows of several models (of different
dimensions) live side by side. Each model key gets one partial HNSW index on a typed cast::

    CREATE INDEX IF NOT EXISTS model_embeddings_hnsw_<12 hex of sha1(model_key)>
      ON model_embeddings USING hnsw ((embedding::vector(<dims>)) <opclass>)
      WHERE model_key = '<model_key>'

A query uses it when it repeats the cast, the operator and the predicate as a literal
(see :func:`vector_expression` and :func:`model_predicate`). The index is built without
``CONCURRENTLY``, inside the caller's transaction: a failed build rolls back and never
leaves an invalid index behind, but the build blocks writes to the table while it runs.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ragplate.catalog.entities import Entity
from ragplate.catalog.errors import DimensionMismatchError, EmbeddingError
from ragplate.catalog.profiles import EmbeddingProfile, vector_operator
from ragplate.infra.pgvector_sql import (
    binary_copy,
    copy_field,
    sql_literal,
    vector_field,
    vector_literal,
)

TABLE = "model_embeddings"
INDEX_PREFIX = "model_embeddings_hnsw_"

_LOAD = "model_embeddings_load"


@dataclass(frozen=True)
class VectorRow:
    """One vector to store for a record's text in one locale."""

    record_key: str
    locale: str
    text_hash: str
    embedding: np.ndarray


def model_index_name(model_key: str) -> str:
    """Name of the partial HNSW index of ``model_key`` (a prefix and a hash: always valid)."""
    return INDEX_PREFIX + hashlib.sha1(model_key.encode()).hexdigest()[:12]


def vector_expression(profile: EmbeddingProfile, column: str = "embedding") -> str:
    """The typed cast the index is built on, e.g. ``(embedding::vector(384))``."""
    return f"({column}::vector({int(profile.dimensions)}))"


def model_predicate(model_key: str, column: str = "model_key") -> str:
    """The index predicate as SQL with a literal: a bound parameter would hide the partial
    index from a generic prepared plan."""
    return f"{column} = {sql_literal(model_key)}"


def model_index_exists(conn: Connection, model_key: str) -> bool:
    """Whether the partial HNSW index of ``model_key`` exists."""
    sql = sa.text("SELECT to_regclass(:n) IS NOT NULL")
    return bool(conn.execute(sql, {"n": model_index_name(model_key)}).scalar_one())


def ensure_model_index(conn: Connection, profile: EmbeddingProfile) -> bool:
    """Create the partial HNSW index of ``profile`` if it is missing; True when created.

    Runs in the caller's transaction. The catalog is checked first so that an existing
    index costs no table lock; an advisory lock keeps two sessions from building it twice.
    """
    if model_index_exists(conn, profile.key):
        return False
    name = model_index_name(profile.key)
    conn.execute(sa.text("SELECT pg_advisory_xact_lock(hashtext(:n))"), {"n": name})
    if model_index_exists(conn, profile.key):
        return False
    opclass = vector_operator(profile.similarity)[1]
    conn.execute(sa.text(
        f"CREATE INDEX IF NOT EXISTS {name} ON {TABLE} USING hnsw "
        f"({vector_expression(profile)} {opclass}) WHERE {model_predicate(profile.key)}"
    ))
    return True


def drop_model_index(conn: Connection, model_key: str) -> bool:
    """Drop the partial HNSW index of ``model_key``; True when one was dropped."""
    existed = model_index_exists(conn, model_key)
    conn.execute(sa.text(f"DROP INDEX IF EXISTS {model_index_name(model_key)}"))
    return existed


def model_indexes(conn: Connection) -> dict[str, str]:
    """Every per-model HNSW index on ``model_embeddings``: name → definition."""
    sql = sa.text(
        "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = :t "
        "AND indexname LIKE :p ORDER BY indexname"
    )
    rows = conn.execute(sql, {"t": TABLE, "p": INDEX_PREFIX.replace("_", r"\_") + "%"})
    return {str(name): str(definition) for name, definition in rows}


def drop_model_indexes_except(conn: Connection, keep: Iterable[str]) -> list[str]:
    """Drop the HNSW index of every model key not in ``keep``; returns the names dropped.

    Index names are hashes, so an index of a key no longer declared anywhere is found by
    its prefix and dropped as well.
    """
    kept = {model_index_name(key) for key in keep}
    dropped = [name for name in model_indexes(conn) if name not in kept]
    for name in dropped:
        conn.execute(sa.text(f"DROP INDEX IF EXISTS {name}"))
    return dropped


def has_vectors(conn: Connection, *, entity: str, model_key: str) -> bool:
    """Whether any record of ``entity`` has a vector of ``model_key``."""
    sql = sa.text(f"SELECT EXISTS (SELECT 1 FROM {TABLE} WHERE model_key = :k AND entity = :e)")
    return bool(conn.execute(sql, {"k": model_key, "e": entity}).scalar_one())


def count_vectors(conn: Connection, *, model_key: str, entity: str | None = None) -> int:
    """Rows of ``model_key`` (of one entity, or of all)."""
    where = "model_key = :k" + ("" if entity is None else " AND entity = :e")
    sql = sa.text(f"SELECT count(*) FROM {TABLE} WHERE {where}")
    return int(conn.execute(sql, {"k": model_key, "e": entity}).scalar_one())


def stored_hashes(
    conn: Connection, *, entity: str, model_key: str, record_keys: Sequence[str] | None = None
) -> dict[tuple[str, str], str]:
    """``{(record_key, locale): text_hash}`` of the stored rows of ``model_key`` (of these
    records, or of every record of the entity)."""
    where = "entity = :e AND model_key = :k"
    params: dict[str, object] = {"e": entity, "k": model_key}
    if record_keys is not None:
        where += " AND record_key = ANY(CAST(:keys AS text[]))"
        params["keys"] = list(record_keys)
    sql = sa.text(f"SELECT record_key, locale, text_hash FROM {TABLE} WHERE {where}")
    return {(r.record_key, r.locale): r.text_hash for r in conn.execute(sql, params)}


def check_vectors(profile: EmbeddingProfile, vectors: np.ndarray, expected_rows: int) -> np.ndarray:
    """The vectors as float32, refused (DimensionMismatchError, EmbeddingError) unless there
    is one finite vector of the profile's dimensions per text."""
    array = np.asarray(vectors, dtype=np.float32)
    if array.ndim != 2 or array.shape[0] != expected_rows:
        rows = array.shape[0] if array.ndim == 2 else 0
        raise EmbeddingError(f"profile '{profile.key}' gave {rows} vectors for {expected_rows} "
                             "texts")
    if array.shape[1] != profile.dimensions:
        raise DimensionMismatchError(profile.key, profile.dimensions, int(array.shape[1]))
    if not np.isfinite(array).all():
        raise EmbeddingError(f"profile '{profile.key}' gave a vector with NaN or infinity")
    return array


def _binary_copy(rows: Sequence[VectorRow]) -> bytes:
    """The rows for the binary COPY into the session-local load table."""
    return binary_copy((copy_field(row.record_key.encode()), copy_field(row.locale.encode()),
                        copy_field(row.text_hash.encode()), vector_field(row.embedding))
                       for row in rows)


def write_vectors(
    conn: Connection, *, entity: str, profile: EmbeddingProfile, rows: Sequence[VectorRow]
) -> int:
    """Insert or replace the vectors of ``profile`` for these texts; returns rows written.

    Every vector is checked against the profile's dimensions before anything is sent, so
    a wrong length raises :class:`DimensionMismatchError` and writes nothing. Rows go
    through a binary COPY into a session-local table, then one upsert on the unique
    (entity, record_key, locale, model_key): a later row of the same text wins.
    """
    unique = list({(r.record_key, r.locale): r for r in rows}.values())
    if not unique:
        return 0
    for row in unique:  # a ragged batch cannot be stacked: name the first wrong length
        size = int(np.asarray(row.embedding).size)
        if size != profile.dimensions:
            raise DimensionMismatchError(profile.key, profile.dimensions, size)
    check_vectors(profile, np.stack([np.asarray(r.embedding).reshape(-1) for r in unique]),
                  len(unique))
    conn.execute(sa.text(
        f"CREATE TEMP TABLE IF NOT EXISTS {_LOAD} (record_key text, locale text, "
        "text_hash text, embedding vector) ON COMMIT DELETE ROWS"
    ))
    raw = conn.connection.driver_connection
    # The driver connection shares the SQLAlchemy transaction: the COPY is atomic with it.
    copy_sql = f"COPY {_LOAD} (record_key, locale, text_hash, embedding) FROM STDIN (FORMAT BINARY)"
    with raw.cursor() as cur, cur.copy(copy_sql) as copy:  # type: ignore[union-attr]
        copy.write(_binary_copy(unique))
    written = conn.execute(sa.text(
        f"INSERT INTO {TABLE} (entity, record_key, locale, model_key, text_hash, embedding) "
        f"SELECT :e, record_key, locale, :k, text_hash, embedding FROM {_LOAD} "
        "ON CONFLICT (entity, record_key, locale, model_key) DO UPDATE SET "
        "text_hash = excluded.text_hash, embedding = excluded.embedding, created_at = now()"
    ), {"e": entity, "k": profile.key}).rowcount
    conn.execute(sa.text(f"DELETE FROM {_LOAD}"))  # a second call in this transaction
    return int(written)


def delete_vectors(
    conn: Connection,
    *,
    entity: str,
    record_keys: Sequence[str],
    keep_locales: Sequence[str] | None = None,
    model_key: str | None = None,
) -> int:
    """Delete the vectors of these records (every model, or ``model_key``), except those of
    ``keep_locales``; returns rows deleted."""
    where = "entity = :e AND record_key = ANY(CAST(:keys AS text[]))"
    params: dict[str, object] = {"e": entity, "keys": list(record_keys)}
    if keep_locales is not None:
        where += " AND NOT (locale = ANY(CAST(:locales AS text[])))"
        params["locales"] = list(keep_locales)
    if model_key is not None:
        where += " AND model_key = :k"
        params["k"] = model_key
    return int(conn.execute(sa.text(f"DELETE FROM {TABLE} WHERE {where}"), params).rowcount)


def delete_entity_vectors(conn: Connection, entity: str | None = None) -> int:
    """Delete every vector of ``entity`` (of every entity when ``None``); returns rows."""
    if entity is None:
        return int(conn.execute(sa.text(f"DELETE FROM {TABLE}")).rowcount)
    sql = sa.text(f"DELETE FROM {TABLE} WHERE entity = :e")
    return int(conn.execute(sql, {"e": entity}).rowcount)


def delete_model_rows_except(conn: Connection, keep: Iterable[str]) -> int:
    """Delete every row whose model key is not in ``keep`` (after an activation)."""
    sql = sa.text(f"DELETE FROM {TABLE} WHERE NOT (model_key = ANY(CAST(:keep AS text[])))")
    return int(conn.execute(sql, {"keep": list(keep)}).rowcount)


def delete_stale_in_range(conn: Connection, *, entity: Entity, model_key: str,
                          low: str | None, high: str | None,
                          keep: Collection[tuple[str, str]]) -> int:
    """Delete the rows of ``model_key`` of records whose key is in ``[low, high)`` (an open
    end when ``None``) that are not ``keep`` ``(record_key, locale)`` pairs: records or
    locales no longer searchable. Returns rows deleted."""
    key = f"CAST(record_key AS {entity.key_type})"
    params: dict[str, object] = {"e": entity.name, "k": model_key}
    clauses = ["entity = :e", "model_key = :k"]
    if low is not None:
        clauses.append(f"{key} >= CAST(:low AS {entity.key_type})")
        params["low"] = low
    if high is not None:
        clauses.append(f"{key} < CAST(:high AS {entity.key_type})")
        params["high"] = high
    rows = conn.execute(sa.text(f"SELECT id, record_key, locale FROM {TABLE} "
                                f"WHERE {' AND '.join(clauses)}"), params).all()
    stale = [r.id for r in rows if (r.record_key, r.locale) not in keep]
    if stale:
        conn.execute(sa.text(f"DELETE FROM {TABLE} WHERE id = ANY(:ids)"), {"ids": stale})
    return len(stale)


def nearest_record_key(conn: Connection, *, entity: str, profile: EmbeddingProfile,
                       vector: np.ndarray) -> str | None:
    """The record key of ``entity``'s nearest vector of ``profile`` to ``vector`` (through
    the profile's HNSW index), ``None`` when the query returns nothing."""
    sql = (f"SELECT record_key FROM {TABLE} WHERE {model_predicate(profile.key)} "
           f"AND entity = :e ORDER BY {vector_expression(profile)} <=> "
           f"CAST(:q AS vector({int(profile.dimensions)})) LIMIT 1")
    found = conn.execute(sa.text(sql), {"e": entity, "q": vector_literal(vector)}).first()
    return None if found is None else str(found[0])

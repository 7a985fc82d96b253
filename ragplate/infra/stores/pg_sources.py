"""Sources across every embedding model of the PostgreSQL documentation indexes: what
``ragplate sources list`` shows and ``ragplate sources remove`` deletes.

A store works on one (index, model); these work on an index's sources whatever the model,
so that a removed source leaves no chunk, keyword vector (generated on the row) or source
record of any model behind, in one transaction.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import sqlalchemy as sa

from ragplate.infra.stores.pgvector import hnsw_index_name, lock_counts


@dataclass(frozen=True)
class SourceRow:
    """One source record of one (index, model)."""

    index: str
    model_key: str
    source: str
    chunk_count: int
    content_hash: str
    indexed_at: datetime | None
    root: str | None


def _like_prefix(prefix: str) -> str:
    escaped = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return escaped + "%"


def source_rows(conn: sa.Connection, indexes: Sequence[str],
                prefix: str | None = None) -> list[SourceRow]:
    """Every source record of ``indexes``, of every model, whose label starts with
    ``prefix``; ordered by index, label, model."""
    where = "index_name = ANY(CAST(:indexes AS text[]))"
    params: dict[str, object] = {"indexes": list(indexes)}
    if prefix:
        where += " AND source LIKE :prefix"
        params["prefix"] = _like_prefix(prefix)
    rows = conn.execute(sa.text(
        "SELECT index_name, model_key, source, chunk_count, content_hash, indexed_at, "
        f"root_prefix FROM rag_sources WHERE {where} "
        "ORDER BY index_name, source, model_key"), params)
    return [SourceRow(r.index_name, r.model_key, r.source, int(r.chunk_count),
                      r.content_hash, r.indexed_at, r.root_prefix) for r in rows]


def remove_sources(conn: sa.Connection, indexes: Sequence[str], labels: Sequence[str],
                   models: Sequence[str] = ()) -> dict[tuple[str, str], tuple[int, int]]:
    """In the caller's transaction, delete the chunks and source records of ``labels``
    from ``indexes`` for every model; returns ``{(index, model): (chunks, sources)}`` of
    what was deleted. The store and word-count locks of each (index, model) are taken
    first, in one order: those of ``models`` (the declared ones, so that a switch writing
    its target's rows waits) before anything is read, then those of any other model
    holding the labels; a write of one of those stores (which takes its word-count lock
    first) waits for the removal, or the removal for it."""
    params = {"indexes": list(indexes), "labels": list(labels)}
    where = ("index_name = ANY(CAST(:indexes AS text[])) "
             "AND source = ANY(CAST(:labels AS text[]))")
    locked: set[tuple[str, str]] = set()

    def lock(pairs: set[tuple[str, str]]) -> None:
        for index, model in sorted(pairs - locked):
            conn.execute(sa.text("SELECT pg_advisory_xact_lock(hashtext(:n))"),
                         {"n": hnsw_index_name(index, model)})
            lock_counts(conn, [(index, model)])
            locked.add((index, model))

    lock({(index, model) for index in indexes for model in models})
    present = {(str(r.index_name), str(r.model_key)) for r in conn.execute(sa.text(
        f"SELECT index_name, model_key FROM rag_sources WHERE {where} UNION "
        f"SELECT index_name, model_key FROM rag_chunks WHERE {where}"), params)}
    lock(present)
    chunks = {(str(r[0]), str(r[1])): int(r[2]) for r in conn.execute(sa.text(
        f"WITH d AS (DELETE FROM rag_chunks WHERE {where} RETURNING index_name, model_key) "
        "SELECT index_name, model_key, count(*) FROM d GROUP BY index_name, model_key"),
        params)}
    records = {(str(r[0]), str(r[1])): int(r[2]) for r in conn.execute(sa.text(
        f"WITH d AS (DELETE FROM rag_sources WHERE {where} RETURNING index_name, model_key) "
        "SELECT index_name, model_key, count(*) FROM d GROUP BY index_name, model_key"),
        params)}
    deleted = set(chunks) | set(records)
    return {pair: (chunks.get(pair, 0), records.get(pair, 0)) for pair in sorted(deleted)}


def indexed_modules(conn: sa.Connection, index: str, model_key: str) -> set[str]:
    """The modules the chunks of one (index, model) declare."""
    rows = conn.execute(sa.text(
        "SELECT DISTINCT metadata->>'module' FROM rag_chunks "
        "WHERE index_name = :index AND model_key = :model AND metadata ? 'module'"),
        {"index": index, "model": model_key})
    return {str(r[0]) for r in rows if r[0]}


def sources_generation(conn: sa.Connection, index: str, model_key: str
                       ) -> tuple[datetime | None, int]:
    """What changes whenever the sources of one (index, model) change: the newest
    ``indexed_at`` and the count of its source records (a cheap key to cache on)."""
    row = conn.execute(sa.text(
        "SELECT max(indexed_at), count(*) FROM rag_sources "
        "WHERE index_name = :index AND model_key = :model"),
        {"index": index, "model": model_key}).one()
    return row[0], int(row[1])

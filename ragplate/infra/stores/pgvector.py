"""PostgreSQL + pgvector store on the shared ``rag_chunks`` / ``rag_sources`` tables. Each
(index, model) gets a partial HNSW index on ``embedding::vector(<dims>)``: the column itself
has no fixed length, so several models can share it."""

from __future__ import annotations

import contextlib
import hashlib
import json
import struct
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import numpy as np
import psycopg
import sqlalchemy as sa
from sqlalchemy.exc import SQLAlchemyError

from ragplate.catalog.errors import StoreError
from ragplate.catalog.profiles import EmbeddingProfile, vector_operator
from ragplate.infra.database import safe_reason
from ragplate.infra.pgvector_sql import (
    SCORE_SQL,
    binary_copy,
    copy_field,
    sql_literal,
    text_array_field,
    vector_field,
    vector_literal,
)
from ragplate.infra.stores import pg_recount
from ragplate.infra.stores.base import (
    EmbeddedChunk,
    SearchFilters,
    SourceRecord,
    StoreHit,
    check_dimensions,
    check_query,
    check_sources_cover,
    rank_hits,
)
from ragplate.infra.stores.pg_keyword import TERM_COUNTS_SQL, keyword_sql
from ragplate.infra.stores.word_counts import counted_terms, counts_of, reading_mark

_COPY = (
    "COPY rag_chunks (index_name, model_key, source, ordinal, text, metadata, embedding, "
    "terms) "
    "FROM STDIN (FORMAT BINARY)"
)
_UPSERT_SOURCE = (
    "INSERT INTO rag_sources "
    "(index_name, model_key, source, content_hash, chunk_count, vector_recipe, root_prefix) "
    "VALUES (:i, :k, :s, :h, :n, :r, :p) ON CONFLICT (index_name, model_key, source) "
    "DO UPDATE SET content_hash = excluded.content_hash, chunk_count = excluded.chunk_count, "
    "vector_recipe = excluded.vector_recipe, root_prefix = excluded.root_prefix, "
    "indexed_at = now()"
)
# A scope is a string, a number or a list of them: compare every id as text.
_TENANT = (
    "EXISTS (SELECT 1 FROM jsonb_array_elements_text(CASE jsonb_typeof(metadata->'tenant_scope')"
    " WHEN 'array' THEN metadata->'tenant_scope' WHEN 'string' THEN jsonb_build_array("
    "metadata->'tenant_scope') WHEN 'number' THEN jsonb_build_array(metadata->'tenant_scope') "
    "ELSE '[]'::jsonb END) AS t(id) WHERE t.id = ANY(CAST(:tenants AS text[])))"
)
# Absent or JSON-null required_permissions means "none"; anything but a list hides the doc,
# exactly like ``base.matches``.
_PERMISSIONS = (
    "CASE jsonb_typeof(metadata->'required_permissions') "
    "WHEN 'array' THEN coalesce(metadata->'required_permissions', '[]'::jsonb) "
    "<@ CAST(:perms AS jsonb) "
    "ELSE coalesce(jsonb_typeof(metadata->'required_permissions'), 'null') = 'null' END"
)


#: The transaction lock of one (index, model)'s word counts (its first key; the second is
#: ``hashtext('<index>/<model>')``): migration 0016's triggers take it before they count,
#: and every writer of ``rag_chunks`` here before it locks any row, so two writers of one
#: index never wait on each other in opposite orders.
COUNTS_LOCK_SPACE = 7311
_COUNTS_LOCK = sa.text("SELECT pg_advisory_xact_lock(:space, hashtext(:pair))")


def lock_counts(conn: sa.Connection, pairs: Iterable[tuple[str, str]]) -> None:
    """Take the word-count locks of these (index, model) pairs, in one order, in the
    caller's transaction (before it deletes or writes any of their chunks)."""
    for index, model in sorted(set(pairs)):
        conn.execute(_COUNTS_LOCK, {"space": COUNTS_LOCK_SPACE, "pair": f"{index}/{model}"})


def hnsw_index_name(index: str, model_key: str) -> str:
    """Name of the partial HNSW index of one (index, model)."""
    return "rag_chunks_hnsw_" + hashlib.sha1(f"{index}|{model_key}".encode()).hexdigest()[:12]


def _binary_copy(index: str, model_key: str, items: Sequence[EmbeddedChunk]) -> bytes:
    """The chunk rows of one (index, model) for the binary COPY into ``rag_chunks``, each
    with the terms it is counted under (``terms``, see
    :mod:`~ragplate.infra.stores.word_counts`: what the index's ``rag_term_counts`` count,
    kept by triggers)."""
    head = (copy_field(index.encode()), copy_field(model_key.encode()))
    rows = []
    for item in items:
        chunk = item.chunk
        meta = b"\x01" + json.dumps(chunk.metadata, ensure_ascii=False, allow_nan=False).encode()
        rows.append((*head, copy_field(chunk.source.encode()),
                     copy_field(struct.pack(">i", chunk.ordinal)),
                     copy_field(chunk.text.encode()), copy_field(meta),
                     vector_field(item.embedding),
                     text_array_field(counted_terms(chunk.source, chunk.text,
                                                    chunk.metadata))))
    return binary_copy(rows)


def filter_sql(filters: SearchFilters | None) -> tuple[list[str], dict[str, Any]]:
    """SQL conditions and bind parameters equivalent to ``base.matches``."""
    f = filters or SearchFilters()
    clauses: list[str] = []
    params: dict[str, Any] = {}
    for field, values in (("audience", f.audiences), ("module", f.modules), ("locale", f.locales)):
        if values is not None:
            clauses.append(f"metadata->>'{field}' = ANY(CAST(:{field} AS text[]))")
            params[field] = list(values)
    if f.scope_module is not None:
        clauses.append("(metadata->>'module' = :scope_module "
                       "OR metadata->'cross_cutting_user' = 'true'::jsonb)")
        params["scope_module"] = f.scope_module
    if f.tenant_scopes is not None:
        clauses.append(_TENANT)
        params["tenants"] = list(f.tenant_scopes)
    if f.permissions is not None:
        clauses.append(_PERMISSIONS)
        params["perms"] = json.dumps(sorted(f.permissions))
    if f.sources is not None:
        clauses.append("source = ANY(CAST(:sources AS text[]))")
        params["sources"] = list(f.sources)
    return clauses, params


class PgvectorStore:
    """A :class:`DocumentStore` in PostgreSQL with pgvector, filtered in SQL.

    The first load of an (index, model) skips HNSW maintenance (bulk load, then build
    once: several times faster); :meth:`ensure_search_index` builds it and ``search``
    calls it when it is missing.
    """

    def __init__(self, index: str, profile: EmbeddingProfile, engine: sa.Engine) -> None:
        self.index = index
        self.profile = profile
        self.engine = engine
        self.index_name = hnsw_index_name(index, profile.key)
        self._operator, self._opclass = vector_operator(profile.similarity)
        self._vector = f"(embedding::vector({int(profile.dimensions)}))"
        # Literal, not bound: the planner only uses a partial index whose predicate it
        # can prove from the query text, and a generic prepared plan would hide it.
        self._scope = (
            f"index_name = {sql_literal(index)} AND model_key = {sql_literal(profile.key)}"
        )
        self._lock = sa.text("SELECT pg_advisory_xact_lock(hashtext(:n))").bindparams(
            n=self.index_name
        )

    def _state(self, conn: sa.Connection) -> tuple[bool, bool]:
        """(the HNSW index exists, this (index, model) has rows)."""
        sql = (
            f"SELECT to_regclass(:n) IS NOT NULL, "
            f"EXISTS (SELECT 1 FROM rag_chunks WHERE {self._scope})"
        )
        indexed, has_rows = conn.execute(sa.text(sql), {"n": self.index_name}).one()
        return bool(indexed), bool(has_rows)

    def ensure_search_index(self) -> None:
        """Create this (index, model)'s partial HNSW index if it does not exist yet."""
        ddl = (
            f"CREATE INDEX IF NOT EXISTS {self.index_name} ON rag_chunks USING hnsw "
            f"({self._vector} {self._opclass}) WHERE {self._scope}"
        )
        with self._transaction() as conn:
            # IF NOT EXISTS alone still races: two sessions can both start the build.
            conn.execute(self._lock)
            created = not self._state(conn)[0]
            conn.execute(sa.text(ddl))
            if created:
                # Fresh statistics after a bulk load: without them the planner may judge
                # the new partial index useless and scan the whole table instead.
                conn.execute(sa.text("ANALYZE rag_chunks"))

    def has_search_index(self) -> bool:
        """Whether the partial HNSW index exists."""
        with self._transaction() as conn:
            return self._state(conn)[0]

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[sa.Connection]:
        """``engine.begin()`` reporting database failures as :class:`StoreError`."""
        try:
            with self.engine.begin() as conn:
                yield conn
        except (SQLAlchemyError, psycopg.Error) as exc:
            reason = safe_reason(exc)
            raise StoreError(f"pgvector store {self.index}/{self.profile.key}: {reason}") from exc

    def _write(
        self,
        items: Sequence[EmbeddedChunk],
        sources: Sequence[SourceRecord],
        drop: Sequence[str] = (),
    ) -> None:
        check_dimensions(self.profile, items)
        check_sources_cover(items, sources)
        try:
            payload = _binary_copy(self.index, self.profile.key, items) if items else b""
        except (TypeError, ValueError, struct.error) as exc:
            raise StoreError(
                f"chunks cannot be stored (JSON metadata, int4 ordinal): {exc}"
            ) from exc
        with self._transaction() as conn:
            self._lock_counts(conn)
            indexed, had_rows = self._state(conn)
            if drop:
                self._delete(conn, drop)
            if payload:
                # The driver connection shares the SQLAlchemy transaction, so COPY is
                # atomic with the deletes and the source upserts around it.
                raw = conn.connection.driver_connection
                with raw.cursor() as cur, cur.copy(_COPY) as copy:  # type: ignore[union-attr]
                    copy.write(payload)
            self._upsert_sources(conn, sources)
        # A first load stays index-free (build once later); later writes keep it current.
        if had_rows and not indexed:
            self.ensure_search_index()

    def _lock_counts(self, conn: sa.Connection) -> None:
        lock_counts(conn, [(self.index, self.profile.key)])

    def _upsert_sources(self, conn: sa.Connection, sources: Sequence[SourceRecord]) -> None:
        # Last record wins, like a dict update; ON CONFLICT refuses duplicates in one VALUES.
        unique = list({s.source: s for s in sources}.values())
        if not unique:
            return
        key = {"i": self.index, "k": self.profile.key}
        rows = [{**key, "s": s.source, "h": s.content_hash, "n": s.chunk_count,
                 "r": s.vector_recipe, "p": s.root} for s in unique]
        conn.execute(sa.text(_UPSERT_SOURCE), rows)

    def _delete(self, conn: sa.Connection, names: Sequence[str]) -> int:
        params = {"names": list(names)}
        where = f"{self._scope} AND source = ANY(CAST(:names AS text[]))"
        deleted = conn.execute(sa.text(f"DELETE FROM rag_chunks WHERE {where}"), params)
        conn.execute(sa.text(f"DELETE FROM rag_sources WHERE {where}"), params)
        return int(deleted.rowcount)

    def add(self, items: Sequence[EmbeddedChunk], sources: Sequence[SourceRecord]) -> None:
        """Append chunks and record their sources (no deletion), in one transaction."""
        self._write(items, sources)

    def replace_sources(
        self, items: Sequence[EmbeddedChunk], sources: Sequence[SourceRecord]
    ) -> None:
        """Delete every listed source, then insert ``items``: one transaction."""
        self._write(items, sources, drop=[s.source for s in sources])

    def delete_sources(self, sources: Iterable[str]) -> int:
        """Delete the chunks and records of these sources; returns chunks deleted."""
        names = list(sources)
        if not names:
            return 0
        with self._transaction() as conn:
            self._lock_counts(conn)
            return self._delete(conn, names)

    def sources(self) -> dict[str, SourceRecord]:
        """Every indexed source, by label."""
        columns = "source, content_hash, model_key, chunk_count, vector_recipe, root_prefix"
        with self._transaction() as conn:
            rows = conn.execute(sa.text(f"SELECT {columns} FROM rag_sources WHERE {self._scope}"))
            return {r.source: SourceRecord(*r) for r in rows}

    def _search_sql(
        self, query: np.ndarray, top_k: int, filters: SearchFilters | None
    ) -> tuple[list[str], str, dict[str, Any]]:
        """(SET LOCAL statements, the query, its parameters) shared by search and explain."""
        clauses, params = filter_sql(filters)
        params.update(q=vector_literal(query), k=top_k)
        distance = f"{self._vector} {self._operator} CAST(:q AS vector({self.profile.dimensions}))"
        score = SCORE_SQL[self.profile.similarity].format(d=distance)
        # (source, ordinal) break ties like the other drivers; the plan stays an HNSW
        # index scan under an incremental sort.
        sql = (
            f"SELECT source, ordinal, text, metadata, {distance} AS distance, {score} AS score "
            f"FROM rag_chunks WHERE {' AND '.join([self._scope, *clauses])} "
            "ORDER BY distance, source, ordinal LIMIT :k"
        )
        ef_search = min(1000, max(40, top_k * 4))
        settings = [f"SET LOCAL hnsw.ef_search = {ef_search}"]
        # Filters (or a depth beyond ef_search) would starve a plain HNSW scan of rows.
        if clauses or top_k > ef_search:
            settings.append("SET LOCAL hnsw.iterative_scan = relaxed_order")
        return settings, sql, params

    def search(
        self,
        vector: np.ndarray,
        *,
        top_k: int,
        filters: SearchFilters | None = None,
        min_score: float | None = None,
    ) -> list[StoreHit]:
        """The ``top_k`` most similar chunks that pass ``filters`` and ``min_score``."""
        query = check_query(self.profile, vector, top_k)
        settings, sql, params = self._search_sql(query, top_k, filters)
        with self._transaction() as conn:
            indexed, has_rows = self._state(conn)
        if not has_rows:
            return []
        if not indexed:
            self.ensure_search_index()
        with self._transaction() as conn:
            for statement in settings:
                conn.execute(sa.text(statement))
            rows = conn.execute(sa.text(sql), params).all()
        # A zero vector has no direction: pgvector says NaN, similarity_score says 0.
        scored = [(r, float(np.nan_to_num(r.score))) for r in rows]
        hits = [
            StoreHit(r.source, r.ordinal, r.text, dict(r.metadata), score)
            for r, score in scored
            if min_score is None or score >= min_score
        ]
        # relaxed_order may return rows slightly out of order: re-sort exactly.
        return rank_hits(hits, top_k)

    def keyword_search(
        self,
        query: str,
        *,
        top_k: int,
        filters: SearchFilters | None = None,
        label_key: str | None = None,
    ) -> list[StoreHit]:
        """The ``top_k`` best labels for ``query`` by BM25 over the generated ``search``
        tsvector (each chunk read in its locale's language), each as its chunk holding
        most query words; filtered in SQL like :meth:`search`."""
        if top_k < 1:
            raise ValueError(f"top_k must be >= 1, got {top_k}")
        clauses, params = filter_sql(filters)
        sql, extra = keyword_sql(" AND ".join([self._scope, *clauses]), query, top_k, label_key)
        params.update(extra)
        with self._transaction() as conn:
            rows = conn.execute(sa.text(sql), params).all()
        hits = [StoreHit(r.source, r.ordinal, r.text, dict(r.metadata), float(r.score))
                for r in rows]
        return rank_hits(hits, top_k)

    def explain(
        self,
        vector: np.ndarray,
        *,
        top_k: int,
        filters: SearchFilters | None = None,
        prefer_index: bool = False,
    ) -> str:
        """The PostgreSQL plan of the query :meth:`search` would run (for diagnosis).

        ``prefer_index`` discourages scans and sorts, to show that the query can use the
        HNSW index even where the planner rightly scans a small table instead.
        """
        query = check_query(self.profile, vector, top_k)
        settings, sql, params = self._search_sql(query, top_k, filters)
        with self._transaction() as conn:
            if prefer_index:
                conn.execute(sa.text("SET LOCAL enable_seqscan = off"))
                conn.execute(sa.text("SET LOCAL enable_sort = off"))
            for statement in settings:
                conn.execute(sa.text(statement))
            return "\n".join(r[0] for r in conn.execute(sa.text("EXPLAIN " + sql), params))

    def term_frequencies(self, terms: Sequence[str]) -> tuple[int, dict[str, int]] | None:
        """The number of chunks, and how many hold each of ``terms``: read from the
        per-(index, model) counts the chunks' writes and deletes keep, one row per term
        (so a common word costs no more than a rare one); ``None`` while some chunk was
        read by another release (see :func:`~ragplate.infra.stores.word_counts.counts_of`)."""
        asked = ["", reading_mark(), *(t for t in dict.fromkeys(terms) if t)]
        with self._transaction() as conn:
            rows = conn.execute(sa.text(TERM_COUNTS_SQL), {
                "i": self.index, "k": self.profile.key, "terms": asked}).all()
        return counts_of({str(r.term): int(r.chunks) for r in rows}, terms,
                         where=f"pgvector index {self.index}/{self.profile.key}")

    def stale_word_counts(self) -> int:
        """How many chunks another release's reading counted (one lookup)."""
        with self._transaction() as conn:
            return pg_recount.stale_chunks(conn, self.index, self.profile.key)

    def recount_words(self) -> int:
        """Count again the chunks another release's reading counted, from their stored
        text, a batch per transaction; returns how many (see :mod:`.pg_recount`)."""
        return pg_recount.recount(self._transaction, self._lock_counts, self.index,
                                  self.profile.key)

    def count(self) -> int:
        """Number of chunks in this index for this profile."""
        with self._transaction() as conn:
            sql = f"SELECT count(*) FROM rag_chunks WHERE {self._scope}"
            return int(conn.execute(sa.text(sql)).scalar_one())

    def reset(self) -> None:
        """Delete this (index, model)'s rows and drop its HNSW index."""
        with self._transaction() as conn:
            conn.execute(self._lock)
            self._lock_counts(conn)
            conn.execute(sa.text(f"DELETE FROM rag_chunks WHERE {self._scope}"))
            conn.execute(sa.text(f"DELETE FROM rag_sources WHERE {self._scope}"))
            conn.execute(sa.text(f"DROP INDEX IF EXISTS {self.index_name}"))


def prune_other_models(conn: sa.Connection, serving: str) -> tuple[int, int, list[str]]:
    """In the caller's transaction, delete every chunk and source record of a model other
    than ``serving`` from every index, and drop the HNSW indexes of those (index, model)
    pairs; returns (chunks deleted, source records deleted, indexes dropped)."""
    params = {"k": serving}
    lock_counts(conn, [(str(r.index_name), str(r.model_key)) for r in conn.execute(sa.text(
        "SELECT DISTINCT index_name, model_key FROM rag_chunks WHERE model_key <> :k"),
        params)])
    chunks = int(conn.execute(sa.text("DELETE FROM rag_chunks WHERE model_key <> :k"),
                              params).rowcount)
    sources = int(conn.execute(sa.text("DELETE FROM rag_sources WHERE model_key <> :k"),
                               params).rowcount)
    names = conn.execute(sa.text("SELECT DISTINCT index_name FROM rag_chunks")).scalars()
    kept = {hnsw_index_name(str(name), serving) for name in names}
    kept |= {hnsw_index_name(name, serving) for name in ("developer", "user")}
    existing = conn.execute(sa.text(
        "SELECT indexname FROM pg_indexes WHERE tablename = 'rag_chunks' "
        r"AND indexname LIKE 'rag\_chunks\_hnsw\_%' ORDER BY indexname")).scalars()
    dropped = [str(name) for name in existing if name not in kept]
    for name in dropped:
        conn.execute(sa.text(f"DROP INDEX IF EXISTS {name}"))
    return chunks, sources, dropped

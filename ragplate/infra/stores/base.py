"""The one store protocol every documentation-store driver implements, and the helpers
every driver shares (dimension and query checks, filter semantics, scores, tie-breaks)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

from ragplate.catalog.documents import Chunk, tenant_ids
from ragplate.catalog.errors import DimensionMismatchError, EmbeddingError
from ragplate.catalog.profiles import EmbeddingProfile


@dataclass(frozen=True)
class EmbeddedChunk:
    """A chunk with its passage vector."""

    chunk: Chunk
    embedding: np.ndarray


@dataclass(frozen=True)
class SourceRecord:
    """What the store knows of one indexed source, for incremental indexing.

    ``vector_recipe`` names how the source's vectors were made (``document-context=1.0``);
    empty for sources stored before it was recorded. ``root`` is the prefix of the root it
    was read from; ``None`` for sources stored before it was recorded."""

    source: str
    content_hash: str
    model_key: str
    chunk_count: int
    vector_recipe: str = ""
    root: str | None = None


@dataclass(frozen=True)
class SearchFilters:
    """Filters applied inside the store query. ``None`` means "do not filter".

    ``tenant_scopes``: a document is visible when one of its ``tenant_scope`` ids is in it.
    ``permissions``: a document is visible when its ``required_permissions`` are a subset.
    ``sources``: only chunks of these sources (the similarity of one source's best chunk).
    ``scope_module``: the assistant's module scope: a document of that module, or one that
    declares ``cross_cutting_user: true``. Relevance only: it is added to the other
    filters, never instead of them.
    """

    audiences: tuple[str, ...] | None = None
    modules: tuple[str, ...] | None = None
    locales: tuple[str, ...] | None = None
    tenant_scopes: tuple[str, ...] | None = None
    permissions: frozenset[str] | None = None
    sources: tuple[str, ...] | None = None
    scope_module: str | None = None


@dataclass(frozen=True)
class StoreHit:
    """One search result: higher ``score`` is more similar."""

    source: str
    ordinal: int
    text: str
    metadata: dict[str, Any]
    score: float


@runtime_checkable
class DocumentStore(Protocol):
    """A documentation index (``developer`` or ``user``) for one embedding profile."""

    index: str
    profile: EmbeddingProfile

    def add(self, items: Sequence[EmbeddedChunk], sources: Sequence[SourceRecord]) -> None:
        """Append chunks and record their sources (no deletion)."""

    def replace_sources(
        self, items: Sequence[EmbeddedChunk], sources: Sequence[SourceRecord]
    ) -> None:
        """Delete every listed source, then insert ``items``: all or nothing."""

    def delete_sources(self, sources: Iterable[str]) -> int:
        """Delete the chunks and records of these sources; returns chunks deleted."""

    def sources(self) -> dict[str, SourceRecord]:
        """Every indexed source, by label."""

    def search(
        self,
        vector: np.ndarray,
        *,
        top_k: int,
        filters: SearchFilters | None = None,
        min_score: float | None = None,
    ) -> list[StoreHit]:
        """The ``top_k`` most similar chunks that pass ``filters`` and ``min_score``."""

    def count(self) -> int:
        """Number of chunks in this index for this profile."""

    def reset(self) -> None:
        """Remove every chunk and source record of this index and profile."""


@runtime_checkable
class KeywordSearch(Protocol):
    """A store that can also rank chunks by keywords (BM25): what hybrid documentation
    retrieval needs besides :class:`DocumentStore`. Every shipped driver implements it."""

    def keyword_search(
        self,
        query: str,
        *,
        top_k: int,
        filters: SearchFilters | None = None,
        label_key: str | None = None,
    ) -> list[StoreHit]:
        """The ``top_k`` best labels (the source, or metadata ``label_key``) for ``query``
        by BM25 over all their chunks that pass ``filters``, each as its chunk holding
        most query words; labels matching no query word are not returned."""


@runtime_checkable
class TermStatistics(Protocol):
    """A store that tells how common words are among its chunks: the assistant's coverage
    check weighs a question's words by it. Every driver implements it."""

    def term_frequencies(self, terms: Sequence[str]) -> tuple[int, dict[str, int]] | None:
        """The number of chunks of this index and profile, and for each of ``terms`` (words
        as :func:`~ragplate.infra.stores.lexical.tokens` gives them: folded, stemmed in a
        chunk's language) how many chunks hold it in their text, source label or heading
        breadcrumb, each chunk read as the assistant reads a hit
        (:func:`~ragplate.infra.stores.word_counts.counted_terms`; not as the store's own
        text search reads it, which keeps paths and versions whole).
        ``None`` when the store cannot tell (an Elasticsearch index holding chunks written
        before they carried their words)."""


@runtime_checkable
class StoredWordCounts(Protocol):
    """A store that keeps its word counts (:class:`TermStatistics`) as its chunks are
    written, so that chunks counted by another release's reading stay counted so until
    read again (pgvector, Elasticsearch); the others count as they are asked."""

    def stale_word_counts(self) -> int:
        """How many chunks the current reading did not count (cheap: no chunk is read)."""

    def recount_words(self) -> int:
        """Count again, from their stored text and without re-embedding, the chunks the
        current reading did not count; returns how many."""


def stale_word_counts(store: object) -> int:
    """The chunks of ``store`` whose words another release counted (0 for the drivers
    that count as they are asked)."""
    return store.stale_word_counts() if isinstance(store, StoredWordCounts) else 0


def recount_words(store: object) -> int:
    """Count again the chunks of ``store`` that another release counted, when there are
    any; returns how many were read again."""
    if not isinstance(store, StoredWordCounts) or not store.stale_word_counts():
        return 0
    return store.recount_words()


def build_search_index(store: DocumentStore) -> None:
    """Build the search index a first bulk load deferred, for the drivers that keep one
    (pgvector's HNSW index); the others search without."""
    ensure = getattr(store, "ensure_search_index", None)
    if ensure is not None:
        ensure()


def check_dimensions(profile: EmbeddingProfile, items: Sequence[EmbeddedChunk]) -> None:
    """Refuse any vector whose length is not the profile's, or (for cosine) that has no
    direction; nothing is written."""
    for item in items:
        vector = np.asarray(item.embedding)
        actual = int(vector.shape[-1])
        if actual != profile.dimensions:
            raise DimensionMismatchError(profile.key, profile.dimensions, actual)
        # Cosine is undefined for a zero vector: pgvector's HNSW index cannot rank it, so
        # such a chunk would silently vanish from searches. It is a broken embedding.
        if profile.similarity == "cosine" and not np.any(vector):
            raise EmbeddingError(
                f"{item.chunk.source}#{item.chunk.ordinal}: zero vector from profile "
                f"'{profile.key}' (cosine similarity is undefined)"
            )


def check_sources_cover(items: Sequence[EmbeddedChunk], sources: Sequence[SourceRecord]) -> None:
    """Every chunk must belong to a listed source, so a batch never half-writes one."""
    listed = {s.source for s in sources}
    stray = sorted({i.chunk.source for i in items} - listed)
    if stray:
        raise ValueError(f"chunks of unlisted sources: {', '.join(stray)}")


def matches(metadata: Mapping[str, Any], filters: SearchFilters | None,
            source: str | None = None) -> bool:
    """The filter semantics in Python, for drivers without a query language (``source``:
    the chunk's source, for a ``sources`` filter)."""
    if filters is None:
        return True
    if filters.sources is not None and source not in filters.sources:
        return False
    if filters.audiences is not None and metadata.get("audience") not in filters.audiences:
        return False
    if filters.modules is not None and metadata.get("module") not in filters.modules:
        return False
    if filters.locales is not None and metadata.get("locale") not in filters.locales:
        return False
    if (filters.scope_module is not None and metadata.get("module") != filters.scope_module
            and metadata.get("cross_cutting_user") is not True):
        return False
    if filters.tenant_scopes is not None:
        scope = metadata.get("tenant_scope")
        if scope is None or not set(tenant_ids(scope)) & set(filters.tenant_scopes):
            return False
    if filters.permissions is not None:
        required = metadata.get("required_permissions")
        if required is None:
            required = []
        if not isinstance(required, list) or not set(map(str, required)) <= filters.permissions:
            return False
    return True


def similarity_score(
    profile: EmbeddingProfile, query: np.ndarray, matrix: np.ndarray
) -> np.ndarray:
    """Scores where higher is more similar, consistent with the pgvector driver."""
    q = np.asarray(query, dtype=np.float32)
    m = np.asarray(matrix, dtype=np.float32)
    if m.size == 0:
        return np.zeros((0,), dtype=np.float32)
    if profile.similarity == "cosine":
        qn = q / (np.linalg.norm(q) or 1.0)
        norms = np.linalg.norm(m, axis=1)
        norms[norms == 0] = 1.0
        return (m @ qn) / norms
    if profile.similarity == "inner_product":
        return m @ q
    return -np.linalg.norm(m - q, axis=1)


def check_query(profile: EmbeddingProfile, vector: np.ndarray, top_k: int) -> np.ndarray:
    """Validate search arguments shared by every driver; returns the query as float32."""
    if top_k < 1:
        raise ValueError(f"top_k must be >= 1, got {top_k}")
    query = np.asarray(vector, dtype=np.float32).reshape(-1)
    if query.shape[0] != profile.dimensions:
        raise DimensionMismatchError(profile.key, profile.dimensions, int(query.shape[0]))
    return query


def rank_hits(hits: Iterable[StoreHit], top_k: int) -> list[StoreHit]:
    """Score descending, then (source, ordinal), so ties resolve the same in every driver."""
    return sorted(hits, key=lambda h: (-h.score, h.source, h.ordinal))[:top_k]

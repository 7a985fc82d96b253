"""The in-process chunk table the memory and filesystem drivers share: rows, vectors and
source records of one (index, model), exact vector search and BM25 keyword search.

:class:`ChunkTable` is storage-agnostic; :class:`TableReads` is the read side of a
:class:`~ragplate.infra.stores.base.DocumentStore` whose state is one: the memory driver
keeps it in the process, the filesystem driver persists it to a file.
"""

from __future__ import annotations

import copy
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ragplate.catalog.profiles import EmbeddingProfile
from ragplate.infra.stores.base import (
    EmbeddedChunk,
    SearchFilters,
    SourceRecord,
    StoreHit,
    check_query,
    matches,
    rank_hits,
    similarity_score,
)
from ragplate.infra.stores.lexical import bm25_scores, chunk_language, query_terms, term_counts
from ragplate.infra.stores.word_counts import counted_terms, counts_of


@dataclass(frozen=True)
class StoredChunk:
    """One chunk row as a local store keeps it (the vector lives in the matrix)."""

    source: str
    ordinal: int
    text: str
    metadata: dict[str, Any]


@dataclass
class ChunkTable:
    """Immutable-by-convention snapshot of one (index, model): every write returns a new
    table, so a failed write never leaves a half-applied state behind."""

    dimensions: int
    rows: tuple[StoredChunk, ...] = ()
    matrix: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), dtype=np.float32))
    records: dict[str, SourceRecord] = field(default_factory=dict)
    #: Per term, how many rows hold it: computed on first use (a table is never changed).
    _document_frequencies: Counter[str] | None = field(default=None, init=False,
                                                       repr=False, compare=False)

    def __post_init__(self) -> None:
        # An empty table still needs a (0, dims) matrix for vstack and scoring.
        if not self.rows:
            self.matrix = np.zeros((0, self.dimensions), dtype=np.float32)

    def written(
        self,
        items: Sequence[EmbeddedChunk],
        sources: Sequence[SourceRecord],
        *,
        drop: Iterable[str] = (),
    ) -> ChunkTable:
        """A new table without the ``drop`` sources, plus ``items`` and ``sources``."""
        dropped = set(drop)
        keep = [i for i, row in enumerate(self.rows) if row.source not in dropped]
        # Deep copies: callers may keep mutating the chunk metadata they handed over.
        new_rows = [
            StoredChunk(
                i.chunk.source, i.chunk.ordinal, i.chunk.text, copy.deepcopy(i.chunk.metadata)
            )
            for i in items
        ]
        vectors = [np.asarray(i.embedding, dtype=np.float32).reshape(-1) for i in items]
        new_matrix = (
            np.vstack([self.matrix[keep], *(v[None, :] for v in vectors)])
            if vectors
            else self.matrix[keep]
        )
        records = {k: v for k, v in self.records.items() if k not in dropped}
        records.update({s.source: s for s in sources})
        return ChunkTable(
            self.dimensions,
            tuple(self.rows[i] for i in keep) + tuple(new_rows),
            new_matrix,
            records,
        )

    def search(
        self,
        profile: EmbeddingProfile,
        query: np.ndarray,
        top_k: int,
        filters: SearchFilters | None,
        min_score: float | None,
    ) -> list[StoreHit]:
        """Exact search: score all rows, keep those passing filters and ``min_score``."""
        if not self.rows:
            return []
        scores = similarity_score(profile, query, self.matrix)
        eligible = np.array([matches(r.metadata, filters, r.source) for r in self.rows],
                            dtype=bool)
        if min_score is not None:
            eligible &= scores >= min_score
        candidates = np.flatnonzero(eligible)
        if candidates.size > top_k:
            # Keep everything tied with the k-th best so the tie-break below stays exact.
            kth = np.partition(scores[candidates], -top_k)[-top_k]
            candidates = candidates[scores[candidates] >= kth]
        hits = (
            StoreHit(
                self.rows[i].source,
                self.rows[i].ordinal,
                self.rows[i].text,
                copy.deepcopy(self.rows[i].metadata),
                float(scores[i]),
            )
            for i in candidates
        )
        return rank_hits(hits, top_k)

    def keyword_search(
        self, query: str, top_k: int, filters: SearchFilters | None, label_key: str | None
    ) -> list[StoreHit]:
        """BM25 per label over the rows that pass ``filters`` (see ``stores.lexical``):
        each label as its row holding most query words; labels matching no query word are
        not returned."""
        if top_k < 1:
            raise ValueError(f"top_k must be >= 1, got {top_k}")
        chosen = [row for row in self.rows if matches(row.metadata, filters, row.source)]
        # A chunk counts the terms of the query read in its own language only.
        read = {name: set(query_terms(query, [name]))
                for name in {chunk_language(row.metadata) for row in chosen}}
        rows: dict[str, list[tuple[StoredChunk, Counter[str], int]]] = {}
        for row in chosen:
            label = str(row.metadata.get(label_key) if label_key else row.source)
            counts = term_counts(row.source, row.text, row.metadata)
            own = read[chunk_language(row.metadata)]
            rows.setdefault(label, []).append(
                (row, Counter({t: n for t, n in counts.items() if t in own}), len(counts)))
        labels = list(rows)
        totals = [sum((c for _, c, _ in rows[label]), Counter()) for label in labels]
        lengths = [float(sum(n for _, _, n in rows[label])) for label in labels]
        terms = sorted(set().union(*read.values())) if read else []
        hits = []
        for label, score in zip(labels, bm25_scores(terms, totals, lengths), strict=True):
            if score <= 0:
                continue
            # The label's representative: the row with most query-word occurrences.
            row, _, _ = min(rows[label], key=lambda rc: (-sum(rc[1].values()),
                                                         rc[0].source, rc[0].ordinal))
            hits.append(StoreHit(row.source, row.ordinal, row.text,
                                 copy.deepcopy(row.metadata), score))
        return rank_hits(hits, top_k)

    def term_frequencies(self, terms: Sequence[str]) -> tuple[int, dict[str, int]] | None:
        """The number of rows, and per term how many rows hold it (each row read as the
        stores count it, :func:`~ragplate.infra.stores.word_counts.counted_terms`);
        counted once per table snapshot."""
        if self._document_frequencies is None:
            counted: Counter[str] = Counter()
            for row in self.rows:
                counted.update(counted_terms(row.source, row.text, row.metadata))
            self._document_frequencies = counted
        return counts_of(self._document_frequencies, terms, where="the local store")

    def chunk_count(self, sources: Iterable[str]) -> int:
        """How many rows belong to ``sources``."""
        wanted = set(sources)
        return sum(1 for r in self.rows if r.source in wanted)


class TableReads:
    """The read side shared by drivers whose state is a :class:`ChunkTable`: they provide
    ``profile``, ``_lock`` and ``_table()``."""

    profile: EmbeddingProfile

    @property
    def _guard(self) -> Any:
        """The lock serialising reads with this driver's writers."""
        return self._lock  # type: ignore[attr-defined]

    def _table(self) -> ChunkTable:
        raise NotImplementedError

    def sources(self) -> dict[str, SourceRecord]:
        """Every indexed source, by label."""
        with self._guard:
            return dict(self._table().records)

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
        with self._guard:
            table = self._table()
        return table.search(self.profile, query, top_k, filters, min_score)

    def keyword_search(
        self,
        query: str,
        *,
        top_k: int,
        filters: SearchFilters | None = None,
        label_key: str | None = None,
    ) -> list[StoreHit]:
        """The ``top_k`` best labels for ``query`` by BM25 (see ``stores.lexical``)."""
        with self._guard:
            table = self._table()
        return table.keyword_search(query, top_k, filters, label_key)

    def term_frequencies(self, terms: Sequence[str]) -> tuple[int, dict[str, int]] | None:
        """The number of chunks, and how many hold each of ``terms``."""
        with self._guard:
            table = self._table()
        return table.term_frequencies(terms)

    def count(self) -> int:
        """Number of chunks in this index for this profile."""
        with self._guard:
            return len(self._table().rows)

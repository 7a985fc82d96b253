"""The Elasticsearch documentation store: one index per (documentation index, model),
``dense_vector`` kNN for vector search, BM25 over per-language fields for keyword search,
every filter a keyword field inside the query.

Writes are as close to all-or-nothing as Elasticsearch allows: a write's chunks carry a
fresh ``generation``; the old chunks of the sources it replaces are deleted only once every
new chunk was accepted (a refused bulk deletes its own generation and raises), and the
index refreshes only at the end (``refresh_interval: -1``), so a reader sees the sources
before or after the write, not half of it. Two writers of one index at once may each
expose the other's unfinished write at their refresh.
"""

from __future__ import annotations

import copy
import hashlib
import logging
import math
import re
import uuid
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ragplate.catalog.documents import tenant_ids
from ragplate.catalog.errors import SearchEngineError
from ragplate.catalog.profiles import EmbeddingProfile
from ragplate.catalog.schema import DOCS_SEARCH_TEXT_CHARS
from ragplate.catalog.text_search import CONFIGURED
from ragplate.infra.elasticsearch import indexes, mappings, names
from ragplate.infra.elasticsearch.bulk import bulk
from ragplate.infra.elasticsearch.client import call, call_or_none
from ragplate.infra.elasticsearch.queries import term
from ragplate.infra.stores import es_recount
from ragplate.infra.stores.base import (
    EmbeddedChunk,
    SearchFilters,
    SourceRecord,
    StoreHit,
    check_dimensions,
    check_query,
    check_sources_cover,
    matches,
    rank_hits,
)
from ragplate.infra.stores.lexical import FIELD_BOOST, chunk_language, field_text
from ragplate.infra.stores.word_counts import counted_terms, counts_of, reading_mark

if TYPE_CHECKING:
    from elasticsearch import Elasticsearch

    from ragplate.catalog.settings import Settings

_log = logging.getLogger(__name__)

#: kNN asks for this many more neighbours than wanted, so that equal scores at the cut
#: are ordered by (source, ordinal) like every driver, not by Elasticsearch's doc order.
TIE_MARGIN = 10
MAX_WINDOW = 10_000
_HIT_FIELDS = {"includes": ["source", "ordinal", "text", "metadata"]}
_LABEL_FIELDS = {None: "source", "safe_source_label": "safe_source_label"}
_WORDS = re.compile(r"[\W_]+")
_KEYWORD_FILTERS = ("audience", "module", "locale", "source_type", "safe_source_label")


def score_to_similarity(similarity: str, score: float) -> float:
    """Elasticsearch's kNN ``_score`` back to ragplate's similarity (higher is closer):
    cosine ``(1 + cos) / 2``; ``l2_norm`` ``1 / (1 + d²)`` → ``-d``; ``max_inner_product``
    ``dot + 1`` (dot ≥ 0) or ``1 / (1 - dot)`` → ``dot``."""
    if similarity == "cosine":
        return 2.0 * score - 1.0
    if similarity == "l2":
        return -math.sqrt(max(0.0, 1.0 / score - 1.0)) if score > 0 else -math.inf
    return score - 1.0 if score >= 1.0 else 1.0 - 1.0 / score


def chunk_document(chunk: EmbeddedChunk, generation: str) -> dict[str, Any]:
    """The Elasticsearch document of one chunk: its text and metadata as written, its
    words in the field of its locale's language, and a keyword field per filter."""
    c = chunk.chunk
    meta = c.metadata
    language = chunk_language(meta)
    doc: dict[str, Any] = {
        "doc_type": "chunk", "source": c.source, "ordinal": c.ordinal,
        "generation": generation, "text": c.text, "metadata": meta,
        f"text_{language}": c.text[:DOCS_SEARCH_TEXT_CHARS],
        # Words of a label split as the other drivers split them ("reminders.md" is two).
        f"label_{language}": _WORDS.sub(" ", field_text(c.source, meta)),
        "embedding": [float(x) for x in np.asarray(chunk.embedding).reshape(-1)],
        # The terms the assistant's word counts count it under (a chunk without the
        # field was written by an earlier release).
        "terms": counted_terms(c.source, c.text, meta),
        # ``true`` only, not the string "true": the filter semantics of ``base.matches``.
        "cross_cutting_user": meta.get("cross_cutting_user") is True,
    }
    for field in _KEYWORD_FILTERS:
        if isinstance(meta.get(field), str):
            doc[field] = meta[field]
    if meta.get("tenant_scope") is not None:
        doc["tenant_scope"] = tenant_ids(meta["tenant_scope"])
    required = meta.get("required_permissions")
    if isinstance(required, list):
        doc["required_permissions"] = sorted({str(p) for p in required})
    elif required is not None:  # anything but a list hides the document
        doc["permissions_unreadable"] = True
    return doc


def source_document(record: SourceRecord) -> dict[str, Any]:
    """The Elasticsearch document of one source record."""
    return {"doc_type": "source", "source": record.source,
            "content_hash": record.content_hash, "model_key": record.model_key,
            "chunk_count": record.chunk_count, "vector_recipe": record.vector_recipe,
            "root": record.root}


def _source_id(source: str) -> str:
    return "source-" + hashlib.sha1(source.encode()).hexdigest()


class ElasticsearchStore:
    """A :class:`~ragplate.infra.stores.base.DocumentStore` and
    :class:`~ragplate.infra.stores.base.KeywordSearch` on one Elasticsearch index of one
    (documentation index, model); the index is created on first write, its role's alias
    given to it when no index holds that alias yet."""

    def __init__(self, index: str, profile: EmbeddingProfile, client: Elasticsearch, *,
                 prefix: str = "ragplate", retries: int = 5, shards: int = 1,
                 replicas: int = 1) -> None:
        self.index = index
        self.profile = profile
        self.client = client
        self.name = names.docs_index(prefix, index, profile.key)
        self.alias = names.docs_alias(prefix, index)
        self.retries = retries
        self._shards, self._replicas = shards, replicas
        self.recreate = f"ragplate index create --profile {index} --force"

    @classmethod
    def from_settings(cls, index: str, profile: EmbeddingProfile,
                      settings: Settings) -> ElasticsearchStore:
        """The store of ``index`` and ``profile`` on the configured cluster."""
        from ragplate.infra.elasticsearch.client import connect

        return cls(index, profile, connect(settings),
                   prefix=settings.elasticsearch_index_prefix,
                   retries=settings.elasticsearch_retries,
                   shards=settings.elasticsearch_shards,
                   replicas=settings.elasticsearch_replicas)

    # -- the index ---------------------------------------------------------------------
    def mapping(self) -> dict[str, Any]:
        """The mapping this store writes."""
        return mappings.documentation_mapping(
            index=self.index, model_key=self.profile.key,
            dimensions=self.profile.dimensions, similarity=self.profile.similarity)

    def ensure_index(self) -> None:
        """Create the index (and give it the alias when the role has none) if missing;
        refuse one of another mapping."""
        indexes.ensure_index(self.client, self.name,
                             settings=mappings.settings_body(self._shards, self._replicas),
                             mappings=self.mapping(), recreate=self.recreate,
                             alias=self.alias)

    def ensure_search_index(self) -> None:
        """The index a first load would defer elsewhere: here, the index itself (so that
        a rebuilt but empty index exists for its alias)."""
        self.ensure_index()

    def create(self, *, force: bool) -> str:
        """Create the index with the current mapping (``force``: drop it first, losing its
        documents) and point the role's alias at it; ``created``, ``recreated`` or
        ``exists`` (an existing index of another mapping raises without ``force``)."""
        existed = indexes.index_meta(self.client, self.name) is not None
        if existed and force:
            indexes.delete_index(self.client, self.name)
        self.ensure_index()
        indexes.point_alias(self.client, self.alias, self.name)
        if not existed:
            return "created"
        return "recreated" if force else "exists"

    def _refresh(self) -> None:
        call(lambda: self.client.indices.refresh(index=self.name), self.name)

    def _delete(self, query: dict[str, Any]) -> int:
        found = call_or_none(lambda: self.client.delete_by_query(
            index=self.name, query=query, conflicts="proceed", refresh=False), self.name)
        return int(found["deleted"]) if found is not None else 0

    # -- filters -----------------------------------------------------------------------
    def _permission_values(self) -> set[str]:
        """Every required permission present in the index (what a holder may lack)."""
        found = call_or_none(lambda: self.client.search(
            index=self.name, size=0, query=term("doc_type", "chunk"),
            aggregations={"perms": {"terms": {"field": "required_permissions",
                                      "size": MAX_WINDOW}}}), self.name)
        if found is None:
            return set()
        return {str(b["key"]) for b in found["aggregations"]["perms"]["buckets"]}

    def modules(self) -> set[str]:
        """The modules the chunks declare (the assistant's module scope reads them)."""
        found = call_or_none(lambda: self.client.search(
            index=self.name, size=0, query=term("doc_type", "chunk"),
            aggregations={"modules": {"terms": {"field": "module", "size": MAX_WINDOW}}}),
            self.name)
        if found is None:
            return set()
        return {str(b["key"]) for b in found["aggregations"]["modules"]["buckets"]}

    def filter_clauses(self, filters: SearchFilters | None) -> list[dict[str, Any]]:
        """Query clauses equivalent to ``base.matches`` (for a bool ``filter``)."""
        f = filters or SearchFilters()
        clauses: list[dict[str, Any]] = [term("doc_type", "chunk")]
        for field, values in (("audience", f.audiences), ("module", f.modules),
                              ("locale", f.locales), ("source", f.sources),
                              ("tenant_scope", f.tenant_scopes)):
            if values is not None:
                clauses.append({"terms": {field: sorted(map(str, values))}})
        if f.scope_module is not None:
            clauses.append({"bool": {"should": [
                term("module", f.scope_module),
                term("cross_cutting_user", True)], "minimum_should_match": 1}})
        if f.permissions is not None:
            # required_permissions ⊆ held: no required permission outside the held ones.
            # (terms_set would say it in one clause; this form needs only plain terms.)
            lacking = sorted(self._permission_values() - set(f.permissions))
            excluded: list[dict[str, Any]] = [term("permissions_unreadable", True)]
            if lacking:
                excluded.append({"terms": {"required_permissions": lacking}})
            clauses.append({"bool": {"must_not": excluded}})
        return clauses

    # -- writes ------------------------------------------------------------------------
    def _write(self, items: Sequence[EmbeddedChunk], sources: Sequence[SourceRecord],
               drop: Sequence[str] = ()) -> None:
        check_dimensions(self.profile, items)
        check_sources_cover(items, sources)
        self.ensure_index()
        generation = uuid.uuid4().hex
        chunks = ({"_index": self.name, "_id": f"{generation}-{n}",
                   "_source": chunk_document(item, generation)}
                  for n, item in enumerate(items))
        try:
            bulk(self.client, chunks, index=self.name, retries=self.retries,
                 recreate=self.recreate)
        except Exception:
            # Nothing of a refused write stays: its generation goes (a deletion by query
            # sees refreshed documents only, hence the refresh first), the old chunks stay.
            # The write's own error is the one raised, whatever the clean-up meets.
            try:
                self._refresh()
                self._delete(term("generation", generation))
                self._refresh()
            except SearchEngineError as cleanup:
                _log.warning("Elasticsearch index %s: the refused write's chunks "
                             "(generation %s) could not be removed: %s",
                             self.name, generation, cleanup)
            raise
        if drop:
            self._delete({"bool": {"filter": [
                term("doc_type", "chunk"), {"terms": {"source": sorted(set(drop))}}],
                "must_not": [term("generation", generation)]}})
        records = ({"_index": self.name, "_id": _source_id(r.source),
                    "_source": source_document(r)}
                   for r in {s.source: s for s in sources}.values())
        bulk(self.client, records, index=self.name, retries=self.retries,
             recreate=self.recreate)
        self._refresh()

    def add(self, items: Sequence[EmbeddedChunk], sources: Sequence[SourceRecord]) -> None:
        """Append chunks and record their sources (no deletion)."""
        self._write(items, sources)

    def replace_sources(self, items: Sequence[EmbeddedChunk],
                        sources: Sequence[SourceRecord]) -> None:
        """Delete every listed source's chunks, then insert ``items`` (see the module
        docstring for how near to atomic it is)."""
        self._write(items, sources, drop=[s.source for s in sources])

    def delete_sources(self, sources: Iterable[str]) -> int:
        """Delete the chunks and records of these sources; returns chunks deleted."""
        listed = sorted(set(sources))
        if not listed:
            return 0
        deleted = self._delete({"bool": {"filter": [term("doc_type", "chunk"),
                                                    {"terms": {"source": listed}}]}})
        self._delete({"bool": {"filter": [term("doc_type", "source"),
                                          {"terms": {"source": listed}}]}})
        call_or_none(lambda: self.client.indices.refresh(index=self.name), self.name)
        return deleted

    def reset(self) -> None:
        """Remove every chunk and source record: the index is deleted (and created again
        by the next write)."""
        indexes.delete_index(self.client, self.name)

    # -- reads -------------------------------------------------------------------------
    def sources(self) -> dict[str, SourceRecord]:
        """Every indexed source, by label (paged by ``search_after``)."""
        found: dict[str, SourceRecord] = {}
        after: list[Any] | None = None
        while True:
            extra: dict[str, Any] = {} if after is None else {"search_after": after}
            page = call_or_none(lambda extra=extra: self.client.search(  # type: ignore[misc]
                index=self.name, query=term("doc_type", "source"), size=1000,
                sort=["source"], **extra), self.name)
            hits = [] if page is None else page["hits"]["hits"]
            for hit in hits:
                s = hit["_source"]
                found[s["source"]] = SourceRecord(s["source"], s["content_hash"],
                                                  s["model_key"], int(s["chunk_count"]),
                                                  s.get("vector_recipe") or "", s.get("root"))
            if len(hits) < 1000:
                return found
            after = hits[-1]["sort"]

    def count(self) -> int:
        """Number of chunks in this index for this profile."""
        found = call_or_none(lambda: self.client.count(
            index=self.name, query=term("doc_type", "chunk")), self.name)
        return 0 if found is None else int(found["count"])

    def stale_word_counts(self) -> int:
        """How many chunks another release's reading counted, or none (written before
        chunks carried their words)."""
        return es_recount.stale_chunks(self.client, self.name)

    def recount_words(self) -> int:
        """Count again, by partial updates, the chunks another release's reading counted;
        returns how many (see :mod:`.es_recount`). An index made before the field gets
        it first."""
        self.ensure_index()
        return es_recount.recount(self.client, self.name, retries=self.retries,
                                  recreate=self.recreate)

    def term_frequencies(self, terms: Sequence[str]) -> tuple[int, dict[str, int]] | None:
        """The number of chunks, and how many hold each of ``terms`` (one aggregation over
        the terms each chunk was written with); ``None`` while the index holds a chunk
        written without its terms or read by another release (``index-docs`` reads them
        again)."""
        wanted = ["", reading_mark(), *(t for t in dict.fromkeys(terms) if t)]
        # One named filter per term: exact counts, however many terms the index holds.
        filters = {f"t{n}": term("terms", word) for n, word in enumerate(wanted)}
        found = call_or_none(lambda: self.client.search(
            index=self.name, size=0, query=term("doc_type", "chunk"), aggregations={
                "terms": {"filters": {"filters": filters}},
                "unread": {"missing": {"field": "terms"}}}), self.name)
        if found is None:
            return 0, dict.fromkeys(terms, 0)
        aggregations = found["aggregations"]
        buckets = aggregations["terms"]["buckets"]
        counts = {word: int(buckets[f"t{n}"]["doc_count"]) for n, word in enumerate(wanted)}
        # A chunk written without terms counts as one the current reading did not read.
        counts[""] += int(aggregations["unread"]["doc_count"])
        return counts_of(counts, terms, where=f"Elasticsearch index {self.name}")

    def _hits(self, found: Any, convert: bool) -> list[StoreHit]:
        hits = []
        for hit in found["hits"]["hits"]:
            s = hit["_source"]
            score = float(hit["_score"])
            if convert:
                score = score_to_similarity(self.profile.similarity, score)
            # A fresh copy: callers may mutate a hit's metadata.
            hits.append(StoreHit(s["source"], int(s["ordinal"]), s["text"],
                                 copy.deepcopy(s.get("metadata") or {}), score))
        return hits

    def _readable(self, found: Any, filters: SearchFilters | None,
                  convert: bool) -> list[StoreHit]:
        # The permission clause is built from the permissions the index held a moment
        # before the query: a chunk written in between (or past the aggregation's window)
        # could pass it. Each hit is checked again here, so such a chunk is left out.
        return [h for h in self._hits(found, convert)
                if matches(h.metadata, filters, h.source)]

    def search(self, vector: np.ndarray, *, top_k: int, filters: SearchFilters | None = None,
               min_score: float | None = None) -> list[StoreHit]:
        """The ``top_k`` most similar chunks that pass ``filters`` (inside the kNN query)
        and ``min_score``."""
        query = check_query(self.profile, vector, top_k)
        k = min(MAX_WINDOW, top_k + TIE_MARGIN)
        knn = {"field": "embedding", "query_vector": [float(x) for x in query], "k": k,
               "num_candidates": min(MAX_WINDOW, max(100, 2 * k)),
               "filter": {"bool": {"filter": self.filter_clauses(filters)}}}
        found = call_or_none(lambda: self.client.search(
            index=self.name, knn=knn, size=k, source=_HIT_FIELDS), self.name)
        if found is None:
            return []
        hits = [h for h in self._readable(found, filters, convert=True)
                if min_score is None or h.score >= min_score]
        return rank_hits(hits, top_k)

    def keyword_search(self, query: str, *, top_k: int, filters: SearchFilters | None = None,
                       label_key: str | None = None) -> list[StoreHit]:
        """The ``top_k`` best labels for ``query`` by BM25 (each chunk read in its
        locale's language, source-label and breadcrumb words boosted), one hit per label:
        its best chunk (``collapse``); filtered inside the query like :meth:`search`."""
        if top_k < 1:
            raise ValueError(f"top_k must be >= 1, got {top_k}")
        if label_key not in _LABEL_FIELDS:
            raise ValueError(f"unsupported label key {label_key!r}")
        should: list[dict[str, Any]] = [{"match": {f"text_{name}": {"query": query}}}
                                        for name in CONFIGURED]
        should += [{"match": {f"label_{name}": {"query": query, "boost": 1 + FIELD_BOOST}}}
                   for name in CONFIGURED]
        found = call_or_none(lambda: self.client.search(
            index=self.name, size=min(MAX_WINDOW, top_k), source=_HIT_FIELDS,
            query={"bool": {"filter": self.filter_clauses(filters), "should": should,
                            "minimum_should_match": 1}},
            collapse={"field": _LABEL_FIELDS[label_key]}), self.name)
        if found is None:
            return []
        return rank_hits(self._readable(found, filters, convert=False), top_k)


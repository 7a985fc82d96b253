"""Application search in Elasticsearch: one index per entity and model
(``{app}_records_cms_contents_<model>``, behind the alias ``{app}_records_cms_contents``)
holding a document per searchable record and locale — its tenant, title and body, the
text read in the locale's language (title words weigh three times), and the model's
vector. PostgreSQL stays the source: the documents are written from its records and
``model_embeddings`` rows (:meth:`ElasticsearchRecords.write`).

Keyword search reads the alias (it needs no model); vector search reads the index of the
model asked for. The rankings are BM25 and kNN; fusion stays in ragplate.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ragplate.catalog.entities import Entity
from ragplate.catalog.profiles import EmbeddingProfile
from ragplate.catalog.text_search import language
from ragplate.infra.elasticsearch import indexes, mappings, names
from ragplate.infra.elasticsearch.bulk import bulk
from ragplate.infra.elasticsearch.client import call, call_or_none
from ragplate.infra.elasticsearch.queries import term
from ragplate.infra.records.search import RecordHit
from ragplate.infra.records.sql import split_negations
from ragplate.infra.records.texts import SearchDocument
from ragplate.infra.stores.base import similarity_score
from ragplate.infra.stores.elasticsearch import score_to_similarity

if TYPE_CHECKING:
    from elasticsearch import Elasticsearch

    from ragplate.catalog.settings import Settings

#: A title word counts this many times a body word (PostgreSQL weighs the title ``A``).
TITLE_BOOST = 3.0
MAX_WINDOW = 10_000
_NUMERIC = ("bigint", "integer", "smallint")
_HIT = {"includes": ["record_key", "locale", "title", "body"]}


def document_id(record_key: str, locale: str) -> str:
    """A search document's id: one per record and locale."""
    return f"{record_key}|{locale}"


def _words(text: str, locale: str) -> list[dict[str, Any]]:
    """Matches of ``text`` in the title (boosted) or the body, in ``locale``'s language."""
    tongue = language(locale)
    return [{"match": {f"title_{tongue}": {"query": text, "boost": TITLE_BOOST}}},
            {"match": {f"body_{tongue}": {"query": text}}}]

class ElasticsearchRecords:
    """The application-search indexes of every entity: written from PostgreSQL, searched
    as a :class:`~ragplate.infra.records.engines.RecordSearch`."""

    def __init__(self, client: Elasticsearch, *, prefix: str = "ragplate", retries: int = 5,
                 shards: int = 1, replicas: int = 1) -> None:
        self.client = client
        self.prefix = prefix
        self.retries = retries
        self._settings = mappings.settings_body(shards, replicas)

    @classmethod
    def from_settings(cls, settings: Settings) -> ElasticsearchRecords:
        """The indexes on the configured cluster."""
        from ragplate.infra.elasticsearch.client import connect

        return cls(connect(settings), prefix=settings.elasticsearch_index_prefix,
                   retries=settings.elasticsearch_retries, shards=settings.elasticsearch_shards,
                   replicas=settings.elasticsearch_replicas)

    def name(self, entity: str, model_key: str) -> str:
        """The index of ``entity`` and a model."""
        return names.records_index(self.prefix, entity, model_key)

    def alias(self, entity: str) -> str:
        """The alias of ``entity``'s serving index."""
        return names.records_alias(self.prefix, entity)

    def ensure(self, entity: Entity, profile: EmbeddingProfile) -> str:
        """Create the index of ``entity`` and ``profile`` if missing; its name."""
        name = self.name(entity.name, profile.key)
        indexes.ensure_index(
            self.client, name, settings=self._settings,
            mappings=mappings.records_mapping(entity=entity.name, model_key=profile.key,
                                              dimensions=profile.dimensions,
                                              similarity=profile.similarity),
            recreate="ragplate embeddings switch (or delete the index and run the switch's "
                     "verify again)", alias=self.alias(entity.name))
        return name

    # -- writes ------------------------------------------------------------------------
    def _document(self, entity: Entity, doc: SearchDocument) -> dict[str, Any]:
        tongue = language(doc.locale)
        body: dict[str, Any] = {
            "record_key": doc.record_key, "locale": doc.locale, "tenant": doc.tenant,
            "text_hash": doc.text_hash, "title": doc.title, "body": doc.body,
            f"title_{tongue}": doc.title, f"body_{tongue}": doc.body}
        if entity.key_type in _NUMERIC:
            body["record_number"] = int(doc.record_key)
        if doc.embedding is not None:
            body["embedding"] = [float(x) for x in doc.embedding]
        return body

    def _scope(self, entity: Entity, keys: Sequence[str] | None, low: str | None,
               high: str | None) -> list[dict[str, Any]]:
        clauses: list[dict[str, Any]] = []
        if keys is not None:
            clauses.append({"terms": {"record_key": sorted(set(map(str, keys)))}})
        bounds: dict[str, Any] = {}
        numeric = entity.key_type in _NUMERIC
        if low is not None:
            bounds["gte"] = int(low) if numeric else low
        if high is not None:
            bounds["lt"] = int(high) if numeric else high
        if bounds:
            clauses.append({"range": {"record_number" if numeric else "record_key": bounds}})
        return clauses

    def write(self, entity: Entity, profile: EmbeddingProfile,
              documents: Sequence[SearchDocument], *, keys: Sequence[str] | None = None,
              low: str | None = None, high: str | None = None) -> int:
        """Make the index of ``entity`` and ``profile`` hold exactly ``documents`` for the
        records among ``keys`` and/or in ``[low, high)`` (both ``None``: every record):
        the documents are written, every other document of that scope is deleted."""
        name = self.ensure(entity, profile)
        written = [document_id(d.record_key, d.locale) for d in documents]
        actions = ({"_index": name, "_id": document_id(d.record_key, d.locale),
                    "_source": self._document(entity, d)} for d in documents)
        count = bulk(self.client, actions, index=name, retries=self.retries)
        stale: dict[str, Any] = {"bool": {"filter": self._scope(entity, keys, low, high)}}
        if written:
            stale["bool"]["must_not"] = [{"ids": {"values": written}}]
        call(lambda: self.client.delete_by_query(index=name, query=stale, conflicts="proceed",
                                                 refresh=False), name)
        call(lambda: self.client.indices.refresh(index=name), name)
        return count

    def delete_records(self, entity: str, keys: Sequence[str]) -> int:
        """Delete the documents of these records from the indexes of every model."""
        deleted = 0
        # The wildcard also matches an entity whose name extends this one's
        # (``cms.contents_archive``): only names ending in a model hash are this entity's.
        own = re.compile(re.escape(self.alias(entity)) + r"_[0-9a-f]{12}")
        for name in indexes.indexes_of(self.client, f"{self.alias(entity)}_*"):
            if not own.fullmatch(name):
                continue
            found = call(lambda name=name: self.client.delete_by_query(  # type: ignore[misc]
                index=name, query={"terms": {"record_key": sorted(set(map(str, keys)))}},
                conflicts="proceed", refresh=True), name)
            deleted += int(found["deleted"])
        return deleted

    def count(self, entity: str, model_key: str) -> int:
        """Documents in the index of ``entity`` and a model (0 without one)."""
        name = self.name(entity, model_key)
        found = call_or_none(lambda: self.client.count(index=name), name)
        return 0 if found is None else int(found["count"])

    # -- RecordSearch ------------------------------------------------------------------
    def has_vectors(self, entity: Entity, model_key: str) -> bool:
        """See :class:`~ragplate.infra.records.engines.RecordSearch`."""
        name = self.name(entity.name, model_key)
        found = call_or_none(lambda: self.client.count(
            index=name, query={"exists": {"field": "embedding"}}), name)
        return found is not None and int(found["count"]) > 0

    def _tenants(self, tenants: Sequence[str] | None) -> list[dict[str, Any]]:
        return [] if tenants is None else [{"terms": {"tenant": sorted(map(str, tenants))}}]

    def keyword_hits(self, entity: Entity, *, query: str, locale: str,
                     tenants: Sequence[str] | None, limit: int) -> list[RecordHit]:
        """BM25 over the texts in ``locale``, read in its language (title words boosted);
        a word or quoted phrase after ``-`` excludes the records holding any of its
        words. Reads the entity's alias (the serving model's index)."""
        wanted, excluded = split_negations(query)
        body: dict[str, Any] = {"filter": [term("locale", locale), *self._tenants(tenants)],
                                "should": _words(wanted, locale), "minimum_should_match": 1}
        if excluded.strip():
            body["must_not"] = _words(excluded, locale)
        alias = self.alias(entity.name)
        found = call_or_none(lambda: self.client.search(
            index=alias, query={"bool": body}, size=min(MAX_WINDOW, limit), source=_HIT),
            alias)
        if found is None:
            return []
        return [RecordHit(h["_source"]["record_key"], h["_source"]["title"],
                          h["_source"]["body"], h["_source"]["locale"], float(h["_score"]))
                for h in found["hits"]["hits"]]

    def vector_hits(self, entity: Entity, *, profile: EmbeddingProfile, vector: np.ndarray,
                    locale: str, tenants: Sequence[str] | None,
                    limit: int, excluded: str = "") -> list[RecordHit]:
        """kNN over every locale's vector of ``profile``'s index, a row per vector (as the
        PostgreSQL query), each returned in ``locale``'s text; a record without one is
        left out. The kNN widens until ``limit`` rows have that text or the index is
        exhausted, as PostgreSQL joins the locale inside its ranking."""
        name = self.name(entity.name, profile.key)
        k = min(MAX_WINDOW, limit)
        while True:
            ranked, exhausted = self._nearest(name, profile, vector, tenants, k)
            hits = self._localized(name, ranked, locale, excluded)
            if len(hits) >= limit or exhausted or k >= MAX_WINDOW:
                return hits[:limit]
            k = min(MAX_WINDOW, 4 * k)

    def _nearest(self, name: str, profile: EmbeddingProfile, vector: np.ndarray,
                 tenants: Sequence[str] | None, k: int) -> tuple[list[tuple[str, float]], bool]:
        """The records of the ``k`` nearest vectors with their similarities, and whether
        fewer than ``k`` vectors were there to find."""
        knn: dict[str, Any] = {
            "field": "embedding", "query_vector": [float(x) for x in np.asarray(vector)],
            "k": k, "num_candidates": min(MAX_WINDOW, max(100, 2 * k))}
        if tenants is not None:
            knn["filter"] = self._tenants(tenants)[0]
        found = call_or_none(lambda: self.client.search(
            index=name, knn=knn, size=k, source={"includes": ["record_key"]}), name)
        if found is None:
            return [], True
        hits = found["hits"]["hits"]
        return [(h["_source"]["record_key"],
                 score_to_similarity(profile.similarity, float(h["_score"])))
                for h in hits], len(hits) < k

    def _localized(self, name: str, ranked: list[tuple[str, float]],
                   locale: str, excluded: str = "") -> list[RecordHit]:
        """``ranked``'s texts in ``locale``, but those holding a word of ``excluded``."""
        if not ranked:
            return []
        ids = sorted({document_id(key, locale) for key, _ in ranked})
        if excluded.strip():
            keys = sorted({key for key, _ in ranked})
            kept = call(lambda: self.client.search(index=name, query={"bool": {
                "filter": [{"terms": {"record_key": keys}}, term("locale", locale)],
                "must_not": _words(excluded, locale)}}, size=len(keys), source=_HIT), name)
            localized = {h["_source"]["record_key"]: h["_source"]
                         for h in kept["hits"]["hits"]}
        else:
            texts = call(lambda: self.client.mget(index=name, ids=ids,
                                                  source_includes=_HIT["includes"]), name)
            localized = {d["_source"]["record_key"]: d["_source"] for d in texts["docs"]
                         if d.get("found")}
        return [RecordHit(key, localized[key]["title"], localized[key]["body"], locale, score)
                for key, score in ranked if key in localized]

    def similarities(self, entity: Entity, *, profile: EmbeddingProfile, vector: np.ndarray,
                     keys: Sequence[str]) -> dict[str, float]:
        """Each record's best similarity over its vectors of ``profile``, computed here
        from the stored vectors (the records another ranking found)."""
        if not keys:
            return {}
        name = self.name(entity.name, profile.key)
        found = call_or_none(lambda: self.client.search(
            index=name, size=min(MAX_WINDOW, 20 * len(keys)),
            query={"bool": {"filter": [{"terms": {"record_key": sorted(set(keys))}},
                                       {"exists": {"field": "embedding"}}]}},
            source={"includes": ["record_key", "embedding"]}), name)
        if found is None:
            return {}
        hits = [h["_source"] for h in found["hits"]["hits"]]
        if not hits:
            return {}
        scores = similarity_score(profile, vector, np.asarray([h["embedding"] for h in hits],
                                                               dtype=np.float32))
        best: dict[str, float] = {}
        for hit, score in zip(hits, scores, strict=True):
            key = hit["record_key"]
            best[key] = max(best.get(key, -np.inf), float(score))
        return best

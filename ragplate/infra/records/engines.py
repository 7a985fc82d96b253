"""Application search's rankings behind one protocol, :class:`RecordSearch`, chosen by
:func:`make_record_search`: PostgreSQL (full-text search and the per-model HNSW indexes of
``model_embeddings``, :mod:`.search`) or Elasticsearch (:mod:`.es_search`). The fusion,
reranking and degradation stay in :mod:`ragplate.tasks.retrieval.application`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np
from sqlalchemy.engine import Engine

from ragplate.catalog.entities import Entity
from ragplate.catalog.profiles import EmbeddingProfile
from ragplate.infra.records import search
from ragplate.infra.records.search import RecordHit
from ragplate.infra.records.vectors import has_vectors

if TYPE_CHECKING:
    from ragplate.catalog.settings import Settings


@runtime_checkable
class RecordSearch(Protocol):
    """The keyword and vector rankings of an entity's searchable records."""

    def has_vectors(self, entity: Entity, model_key: str) -> bool:
        """Whether any record of ``entity`` has a vector of ``model_key``."""

    def keyword_hits(self, entity: Entity, *, query: str, locale: str,
                     tenants: Sequence[str] | None, limit: int) -> list[RecordHit]:
        """Keyword ranking of the texts in ``locale`` (read in its language), best first."""

    def vector_hits(self, entity: Entity, *, profile: EmbeddingProfile, vector: np.ndarray,
                    locale: str, tenants: Sequence[str] | None,
                    limit: int, excluded: str = "") -> list[RecordHit]:
        """The ``limit`` nearest vectors of ``profile`` (any locale's) of records that
        have a text in ``locale``, which is the text returned, and whose text holds no word
        of ``excluded`` (read as :meth:`keyword_hits` reads a ``-`` word)."""

    def similarities(self, entity: Entity, *, profile: EmbeddingProfile, vector: np.ndarray,
                     keys: Sequence[str]) -> dict[str, float]:
        """``{record key: best similarity to vector}`` of ``keys`` (absent: no vector)."""


class PostgresRecordSearch:
    """:class:`RecordSearch` in PostgreSQL (the statements of :mod:`.sql`)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def has_vectors(self, entity: Entity, model_key: str) -> bool:
        """See :class:`RecordSearch`."""
        with self.engine.connect() as conn:
            return has_vectors(conn, entity=entity.name, model_key=model_key)

    def keyword_hits(self, entity: Entity, *, query: str, locale: str,
                     tenants: Sequence[str] | None, limit: int) -> list[RecordHit]:
        """See :class:`RecordSearch`."""
        with self.engine.connect() as conn:
            return search.keyword_hits(conn, entity, query=query, locale=locale,
                                       tenants=tenants, limit=limit)

    def vector_hits(self, entity: Entity, *, profile: EmbeddingProfile, vector: np.ndarray,
                    locale: str, tenants: Sequence[str] | None,
                    limit: int, excluded: str = "") -> list[RecordHit]:
        """See :class:`RecordSearch`."""
        with self.engine.connect() as conn:
            return search.vector_hits(conn, entity, profile=profile, vector=vector,
                                      locale=locale, tenants=tenants, limit=limit,
                                      excluded=excluded)

    def similarities(self, entity: Entity, *, profile: EmbeddingProfile, vector: np.ndarray,
                     keys: Sequence[str]) -> dict[str, float]:
        """See :class:`RecordSearch`."""
        with self.engine.connect() as conn:
            return search.similarities(conn, entity, profile=profile, vector=vector,
                                       keys=keys)


def make_record_search(settings: Settings, engine: Engine | None) -> RecordSearch:
    """Elasticsearch's record indexes when ``RAGPLATE_ELASTICSEARCH_URL`` is set, else
    PostgreSQL through ``engine``."""
    if settings.uses_elasticsearch:
        from ragplate.infra.records.es_search import ElasticsearchRecords

        return ElasticsearchRecords.from_settings(settings)
    if engine is None:
        from ragplate.infra.database import get_engine

        engine = get_engine(settings)
    return PostgresRecordSearch(engine)

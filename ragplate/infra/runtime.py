"""The wiring every edge needs: settings, the database, the active profile, stores."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

from sqlalchemy.engine import Engine

from ragplate.catalog.documents import AudiencePolicy
from ragplate.catalog.errors import ActiveProfileError, UnknownProfileError
from ragplate.catalog.profiles import EmbeddingProfile, get_profile
from ragplate.catalog.settings import Settings
from ragplate.infra import analytics, settings_store
from ragplate.infra.analytics_writer import QueryWriter
from ragplate.infra.database import get_engine
from ragplate.infra.model_storage import ModelStorage, make_model_storage
from ragplate.infra.models import Embedder, make_embedder
from ragplate.infra.records.engines import PostgresRecordSearch, RecordSearch
from ragplate.infra.stores import make_store
from ragplate.infra.stores.base import DocumentStore

if TYPE_CHECKING:
    from ragplate.infra.records.es_search import ElasticsearchRecords


@dataclass
class Runtime:
    """Lazily opened resources for one process (the engine and models are shared)."""

    settings: Settings

    @cached_property
    def engine(self) -> Engine:
        """The migrated database engine (starts the embedded PostgreSQL if needed)."""
        return get_engine(self.settings)

    def active_profile(self) -> EmbeddingProfile:
        """The profile that serves search, as stored in PostgreSQL."""
        key = settings_store.active_profile_key(self.engine)
        try:
            return get_profile(key)
        except UnknownProfileError as exc:
            raise ActiveProfileError(
                f"the active embedding profile stored in PostgreSQL, '{key}', is not a "
                f"declared profile (declared: {', '.join(exc.known or [])}); run with the "
                f"configuration that declared it (the hashing profiles need "
                f"RAGPLATE_TEST_PROFILES=true)") from exc

    def embedder(self, profile: EmbeddingProfile | None = None) -> Embedder:
        """An embedder for ``profile`` (default: the active one)."""
        return make_embedder(profile or self.active_profile(), self.settings)

    def store(self, index: str, profile: EmbeddingProfile | None = None) -> DocumentStore:
        """The configured documentation store for ``index`` and ``profile``."""
        profile = profile or self.active_profile()
        driver = self.settings.vector_store
        engine = self.engine if driver == "pgvector" else None
        return make_store(driver, index=index, profile=profile, settings=self.settings,
                          engine=engine)

    @cached_property
    def query_writer(self) -> QueryWriter:
        """This process's writer of query records into the analytics store."""
        return QueryWriter(lambda record, user_id: self.query_log.insert(record,
                                                                         user_id=user_id))

    @cached_property
    def query_log(self) -> analytics.QueryLog:
        """The query analytics store (PostgreSQL, or Elasticsearch when configured, which
        asks PostgreSQL whether a person still exists only when it writes)."""
        engine = None if self.settings.uses_elasticsearch else self.engine
        return analytics.make_query_log(
            self.settings, engine,
            person_exists=lambda user_id: analytics.person_exists_in(self.engine, user_id))

    @cached_property
    def record_search(self) -> RecordSearch:
        """Application search's rankings (PostgreSQL, or Elasticsearch when configured)."""
        if self.record_index is not None:
            return self.record_index
        return PostgresRecordSearch(self.engine)

    @cached_property
    def record_index(self) -> ElasticsearchRecords | None:
        """The Elasticsearch application-search indexes that record writes and the switch
        keep in step (``None`` without ``RAGPLATE_ELASTICSEARCH_URL``)."""
        if not self.settings.uses_elasticsearch:
            return None
        from ragplate.infra.records.es_search import ElasticsearchRecords

        return ElasticsearchRecords.from_settings(self.settings)

    @cached_property
    def model_storage(self) -> ModelStorage:
        """The switch's per-model storage (PostgreSQL, or Elasticsearch when configured)."""
        return make_model_storage(self.settings)

    @property
    def policy(self) -> AudiencePolicy:
        """The user-corpus audience policy with the configured classification version."""
        return AudiencePolicy(self.settings.policy_classification_version)

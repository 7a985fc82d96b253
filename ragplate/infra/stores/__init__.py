"""Documentation-store drivers behind one :class:`DocumentStore` protocol."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ragplate.catalog.errors import ConfigurationError
from ragplate.catalog.profiles import EmbeddingProfile
from ragplate.infra.stores.base import (
    DocumentStore,
    EmbeddedChunk,
    SearchFilters,
    SourceRecord,
    StoreHit,
    check_dimensions,
    check_sources_cover,
    matches,
    similarity_score,
)
from ragplate.infra.stores.filesystem import FilesystemStore
from ragplate.infra.stores.memory import MemoryStore
from ragplate.infra.stores.pgvector import PgvectorStore

if TYPE_CHECKING:
    import sqlalchemy as sa

    from ragplate.catalog.settings import Settings

__all__ = [
    "STORE_NAMES",
    "DocumentStore",
    "EmbeddedChunk",
    "FilesystemStore",
    "MemoryStore",
    "PgvectorStore",
    "SearchFilters",
    "SourceRecord",
    "StoreHit",
    "check_dimensions",
    "check_sources_cover",
    "make_store",
    "matches",
    "similarity_score",
]

STORE_NAMES: tuple[str, ...] = ("pgvector", "elasticsearch", "filesystem", "memory")


def make_store(
    name: str,
    *,
    index: str,
    profile: EmbeddingProfile,
    settings: Settings,
    engine: sa.Engine | None = None,
) -> DocumentStore:
    """The store driver ``name`` (``pgvector``, ``elasticsearch``, ``filesystem`` or
    ``memory``) for one index and embedding profile; raises :class:`ConfigurationError`
    for other names."""
    if name == "memory":
        return MemoryStore(index, profile)
    if name == "filesystem":
        return FilesystemStore(index, profile, settings.home / "stores")
    if name == "pgvector":
        # Imported here: it pulls in the embedded PostgreSQL machinery.
        from ragplate.infra.database import get_engine

        return PgvectorStore(index, profile, engine if engine is not None else get_engine(settings))
    if name == "elasticsearch":
        # Imported here: the client is loaded only where Elasticsearch is configured.
        from ragplate.infra.stores.elasticsearch import ElasticsearchStore

        return ElasticsearchStore.from_settings(index, profile, settings)
    raise ConfigurationError(f"unknown vector store {name!r} (accepted: {', '.join(STORE_NAMES)})")

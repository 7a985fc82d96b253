"""Keeping an embeddable record's vectors in step with an applied CRUD write.

The vectors are written in the write's own transaction, from the texts as that transaction
sees them: a provider failure or a vector of the wrong length
(:class:`~ragplate.catalog.errors.DimensionMismatchError`, checked before anything is
stored) rolls the write back, and search never sees a saved text without its vector.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from sqlalchemy.engine import Connection

from ragplate.catalog.entities import SHIPPED
from ragplate.catalog.profiles import EmbeddingProfile
from ragplate.infra.models.base import Embedder
from ragplate.infra.records.texts import record_texts
from ragplate.infra.records.vectors import delete_vectors
from ragplate.tasks.records.texts import changed_texts, embed_texts, store_vectors

EmbedderFor = Callable[[EmbeddingProfile], Embedder]


def embedded(entity: str) -> bool:
    """Whether records of ``entity`` have vectors (an embeddable entity)."""
    return entity in SHIPPED


def admitted(module: str, modules: Sequence[str]) -> bool:
    """Whether ``RAGPLATE_EMBEDDINGS_MODULES`` lets writes of ``module`` re-embed (an
    empty list admits every module)."""
    return not modules or module in modules


def refresh_vectors(conn: Connection, entity: str, key: int, *,
                    profiles: Sequence[EmbeddingProfile], embedder_for: EmbedderFor) -> int:
    """Re-embed the record's searchable texts whose stored hash changed, with every
    profile of ``profiles``; a locale no longer searchable (or a record no longer
    published) loses its vectors. Returns the rows written."""
    texts = record_texts(conn, SHIPPED[entity], keys=[key])
    delete_vectors(conn, entity=entity, record_keys=[str(key)],
                   keep_locales=[t.locale for t in texts])
    written = 0
    for profile in profiles:
        todo = changed_texts(conn, texts, profile.key)
        if todo:
            rows = embed_texts(todo, profile=profile, embedder=embedder_for(profile))
            written += store_vectors(conn, rows, profile=profile)
    return written


def forget_vectors(conn: Connection, entity: str, key: int) -> None:
    """Delete every vector of a deleted record (of every model)."""
    delete_vectors(conn, entity=entity, record_keys=[str(key)])

"""Keeping the Elasticsearch application-search indexes in step with PostgreSQL, which
stays the source of records and vectors: after a record write, a demo or fixture load, and
in every entity chunk of the switch, the documents of the records concerned are written
again from what PostgreSQL holds (a record no longer searchable loses them). Without
Elasticsearch (``index`` is ``None``) there is nothing to do: PostgreSQL searches its own
tables."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy.engine import Connection, Engine

from ragplate.catalog.entities import Entity
from ragplate.catalog.profiles import EmbeddingProfile
from ragplate.infra.records.es_search import ElasticsearchRecords
from ragplate.infra.records.texts import search_documents


def refresh_records(index: ElasticsearchRecords | None, source: Connection | Engine,
                    entity: Entity, profiles: Sequence[EmbeddingProfile], *,
                    keys: Sequence[str] | None = None, low: str | None = None,
                    high: str | None = None) -> int:
    """Write the search documents of ``entity``'s records among ``keys`` and/or in
    ``[low, high)`` (neither: all of them) into each profile's index, as ``source`` (a
    connection sees its own transaction's writes) holds them; returns documents written."""
    if index is None:
        return 0
    written = 0
    for profile in profiles:
        if isinstance(source, Engine):
            with source.connect() as conn:
                documents = search_documents(conn, entity, model_key=profile.key, keys=keys,
                                             key_from=low, key_to=high)
        else:
            documents = search_documents(source, entity, model_key=profile.key, keys=keys,
                                         key_from=low, key_to=high)
        written += index.write(entity, profile, documents, keys=keys, low=low, high=high)
    return written


def forget_records(index: ElasticsearchRecords | None, entity: str,
                   keys: Sequence[str]) -> int:
    """Delete deleted records' documents from every model's index."""
    return 0 if index is None else index.delete_records(entity, keys)

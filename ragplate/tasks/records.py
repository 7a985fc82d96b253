"""The texts of embeddable records and their vectors: read, find missing, embed, write.

A *text* is one searchable record in one locale: its text fields joined by a blank line,
identified by ``(entity, record_key, locale)`` and fingerprinted by the SHA-256 of the
text. A vector row of a model is current when it carries that hash; anything else is
*missing* and is embedded again. Only searchable records (status among the entity's
``searchable_statuses``) have texts.

These are the building blocks of content writes (:mod:`ragplate.tasks.content`) and of
the embedding-model switch, which walks an entity in key ranges (:func:`key_ranges`).
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Sequence
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from ragplate.catalog.entities import Entity, get_entity
from ragplate.catalog.errors import ConfigurationError, UnknownProfileError
from ragplate.catalog.profiles import EmbeddingProfile, get_profile
from ragplate.infra import settings_store
from ragplate.infra.embedders.base import Embedder
from ragplate.infra.stores import entity_sql
from ragplate.infra.stores.entity_sql import Key
from ragplate.infra.stores.model_embeddings import (
    VectorRow,
    check_vectors,
    ensure_model_index,
    stored_hashes,
    write_vectors,
)

log = logging.getLogger(__name__)

#: The table the embedding-model switch keeps its state in (see
#: :func:`embedding_profiles_for_writes`).
SWITCH_TABLE = "embedding_switch"


@dataclass(frozen=True)
class RecordText:
    """One searchable record's text in one locale, as it is embedded."""

    entity: str
    record_key: str
    locale: str
    text: str
    text_hash: str


@dataclass(frozen=True)
class KeyRange:
    """Records with ``key_from <= key < key_to``; ``None`` leaves that end open."""

    key_from: str | None
    key_to: str | None


def compose_text(fields: Sequence[str | None]) -> str:
    """The embedded text: the non-empty fields joined by a blank line (what
    :func:`ragplate.infra.stores.entity_sql.text_expression` computes in SQL)."""
    return "\n\n".join(f for f in fields if f)


def text_hash(text: str) -> str:
    """SHA-256 of the UTF-8 text, hex (what ``model_embeddings.text_hash`` stores)."""
    return hashlib.sha256(text.encode()).hexdigest()


def _entity(entity: Entity | str) -> Entity:
    return entity if isinstance(entity, Entity) else get_entity(entity)


def _texts(conn: Connection, entity: Entity, query: entity_sql.Query) -> list[RecordText]:
    rows = conn.execute(sa.text(query.sql), query.params)
    return [RecordText(entity.name, r.record_key, r.locale, r.text, r.text_hash) for r in rows]


def record_texts(
    conn: Connection,
    entity: Entity | str,
    *,
    key_from: Key | None = None,
    key_to: Key | None = None,
    keys: Sequence[Key] | None = None,
) -> list[RecordText]:
    """The searchable texts of ``entity`` in key order (then locale), restricted to
    ``key_from <= key < key_to`` and/or to ``keys`` when given. Records with no text in a
    locale (every field empty) have no text there."""
    ent = _entity(entity)
    query = entity_sql.texts_query(ent, key_from=key_from, key_to=key_to, keys=keys)
    return _texts(conn, ent, query)


def missing_embeddings(
    conn: Connection,
    entity: Entity | str,
    model_key: str,
    *,
    key_from: Key | None = None,
    key_to: Key | None = None,
    keys: Sequence[Key] | None = None,
) -> list[RecordText]:
    """Like :func:`record_texts`, but only the texts that have no row of ``model_key``
    with their current text hash (never embedded, or edited since)."""
    ent = _entity(entity)
    query = entity_sql.texts_query(ent, key_from=key_from, key_to=key_to, keys=keys,
                                   missing_for=model_key)
    return _texts(conn, ent, query)


def count_texts(conn: Connection, entity: Entity | str) -> int:
    """Searchable texts of ``entity``: what a full re-embedding costs."""
    query = entity_sql.count_texts_query(_entity(entity))
    return int(conn.execute(sa.text(query.sql), query.params).scalar_one())


def key_ranges(conn: Connection, entity: Entity | str, *, chunk_size: int) -> list[KeyRange]:
    """Consecutive ranges of ``chunk_size`` searchable records in key order, covering every
    key: the first range is open below and the last open above, so a record created later
    still falls in exactly one range. No records: one range open at both ends."""
    if chunk_size < 1:
        raise ValueError("chunk_size must be at least 1")
    query = entity_sql.key_boundaries_query(_entity(entity), chunk_size=chunk_size)
    bounds: list[str | None] = [None, *conn.execute(sa.text(query.sql), query.params).scalars()]
    return [KeyRange(bounds[i], bounds[i + 1] if i + 1 < len(bounds) else None)
            for i in range(len(bounds))]


def changed_texts(
    conn: Connection, texts: Sequence[RecordText], model_key: str
) -> list[RecordText]:
    """The texts whose stored row of ``model_key`` is missing or has another hash."""
    result: list[RecordText] = []
    by_entity: dict[str, list[RecordText]] = {}
    for text in texts:
        by_entity.setdefault(text.entity, []).append(text)
    for name, group in by_entity.items():
        stored = stored_hashes(conn, entity=name, model_key=model_key,
                               record_keys=sorted({t.record_key for t in group}))
        result += [t for t in group if stored.get((t.record_key, t.locale)) != t.text_hash]
    return result


def embed_texts(
    texts: Sequence[RecordText], *, profile: EmbeddingProfile, embedder: Embedder
) -> dict[str, list[VectorRow]]:
    """Passage vectors of ``texts`` as rows per entity, checked against the profile (a
    wrong length raises :class:`DimensionMismatchError`). Nothing is written."""
    if embedder.profile.key != profile.key:
        raise ConfigurationError(
            f"embedder of '{embedder.profile.key}' cannot write vectors of '{profile.key}'"
        )
    if not texts:
        return {}
    vectors = check_vectors(profile, embedder.embed_passages([t.text for t in texts]),
                            len(texts))
    rows: dict[str, list[VectorRow]] = {}
    for text, vector in zip(texts, vectors, strict=True):
        rows.setdefault(text.entity, []).append(
            VectorRow(text.record_key, text.locale, text.text_hash, vector)
        )
    return rows


def store_vectors(
    conn: Connection,
    rows: dict[str, list[VectorRow]],
    *,
    profile: EmbeddingProfile,
    ensure_index: bool = True,
) -> int:
    """Write rows from :func:`embed_texts` in the caller's transaction; then, with
    ``ensure_index``, create the profile's HNSW index if it is missing."""
    written = sum(write_vectors(conn, entity=name, profile=profile, rows=group)
                  for name, group in rows.items())
    if ensure_index and written:
        ensure_model_index(conn, profile)
    return written


def embed_record_texts(
    engine: Engine,
    texts: Sequence[RecordText],
    *,
    profile: EmbeddingProfile,
    embedder: Embedder,
    ensure_index: bool = True,
) -> int:
    """Embed ``texts`` with ``profile`` and upsert their rows; returns rows written.

    Texts whose row of this profile already carries their hash are skipped (not embedded).
    The vectors are computed before any transaction is opened and checked first: a vector
    of the wrong length raises :class:`DimensionMismatchError` and nothing is written. The
    rows are written in one transaction. ``ensure_index=False`` defers the HNSW index (a
    bulk load builds it once at the end with
    :func:`~ragplate.infra.stores.model_embeddings.ensure_model_index`).
    """
    with engine.connect() as conn:
        todo = changed_texts(conn, texts, profile.key)
    rows = embed_texts(todo, profile=profile, embedder=embedder)
    if not rows:
        return 0
    with engine.begin() as conn:
        return store_vectors(conn, rows, profile=profile, ensure_index=ensure_index)


def embedding_profiles_for_writes(engine: Engine) -> list[EmbeddingProfile]:
    """The profiles a record write must embed with: the serving profile, then the target
    of an embedding-model switch in progress.

    **Contract with the switch.** The switch keeps its state in a table named
    ``embedding_switch`` (:data:`SWITCH_TABLE`) with at least the text columns ``status``
    and ``target`` (a profile key). While a row has ``status`` ``running`` or ``failed``
    and a ``target`` other than the serving profile, records created or edited are also
    embedded with the target, so the switch never misses them. Without the table (no
    switch ever ran), or with no such row, only the serving profile is returned. A target
    that is no longer a declared profile is skipped with a warning: it could not be
    embedded anyway, and the switch's own checks report it.
    """
    serving = get_profile(settings_store.active_profile_key(engine))
    profiles = [serving]
    with engine.connect() as conn:
        if not conn.execute(sa.text("SELECT to_regclass(:t) IS NOT NULL"),
                            {"t": SWITCH_TABLE}).scalar_one():
            return profiles
        targets = conn.execute(sa.text(
            f"SELECT DISTINCT target FROM {SWITCH_TABLE} WHERE status IN ('running', 'failed') "
            "AND target IS NOT NULL ORDER BY target"
        )).scalars().all()
    for key in targets:
        if key == serving.key:
            continue
        try:
            profiles.append(get_profile(str(key)))
        except UnknownProfileError:
            log.warning("embedding switch target %r is not a declared profile; records are "
                        "written with the serving profile only", key)
    return profiles

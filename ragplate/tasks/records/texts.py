"""The vectors of embeddable records' texts: compose, find changed, embed, write.

A text (:class:`~ragplate.infra.records.texts.RecordText`, read by
:mod:`ragplate.infra.records.texts`) whose stored vector row of a model carries another
hash, or none, is embedded again. These are the building blocks of content writes
(:mod:`ragplate.tasks.records.content`) and of the embedding-model switch.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Sequence

from sqlalchemy.engine import Connection, Engine

from ragplate.catalog.errors import ConfigurationError, UnknownProfileError
from ragplate.catalog.profiles import EmbeddingProfile, get_profile
from ragplate.infra import settings_store, switch_state
from ragplate.infra.models.base import Embedder
from ragplate.infra.records.texts import RecordText
from ragplate.infra.records.vectors import (
    VectorRow,
    check_vectors,
    ensure_model_index,
    stored_hashes,
    write_vectors,
)

log = logging.getLogger(__name__)


def compose_text(fields: Sequence[str | None]) -> str:
    """The embedded text: the non-empty fields joined by a blank line (what
    :func:`ragplate.infra.records.sql.text_expression` computes in SQL)."""
    return "\n\n".join(f for f in fields if f)


def text_hash(text: str) -> str:
    """SHA-256 of the UTF-8 text, hex (what ``model_embeddings.text_hash`` stores)."""
    return hashlib.sha256(text.encode()).hexdigest()


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
    :func:`~ragplate.infra.records.vectors.ensure_model_index`).
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
    ``embedding_switch`` (:data:`ragplate.infra.switch_state.TABLE`) with at least the text
    columns ``status`` and ``target`` (a profile key). While a row has ``status``
    ``running`` or ``failed`` and a ``target`` other than the serving profile, records
    created or edited are also embedded with the target, so the switch never misses them.
    Without the table (no switch ever ran), or with no such row, only the serving profile
    is returned. A target
    that is no longer a declared profile is skipped with a warning: it could not be
    embedded anyway, and the switch's own checks report it.
    """
    serving = get_profile(settings_store.active_profile_key(engine))
    profiles = [serving]
    with engine.connect() as conn:
        targets = switch_state.stored_targets(conn)
    for key in targets:
        if key == serving.key:
            continue
        try:
            profiles.append(get_profile(str(key)))
        except UnknownProfileError:
            log.warning("embedding switch target %r is not a declared profile; records are "
                        "written with the serving profile only", key)
    return profiles

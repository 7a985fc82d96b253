"""Create, edit and delete ``cms.contents`` records, keeping their vectors in step.

A write embeds the record's changed texts with every profile the caller passes (the
serving one, plus a switch's target while a switch runs: see
:func:`ragplate.tasks.records.texts.embedding_profiles_for_writes`) *before* it opens its
transaction, then writes the record, its translations and the vectors in one transaction:
search never sees a saved text without its vectors, and a provider failure or a wrong
vector length leaves the record as it was.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence

from sqlalchemy.engine import Engine

from ragplate.catalog.entities import CMS_CONTENTS, CONTENT_STATUSES, SHIPPED
from ragplate.catalog.errors import InvalidInputError
from ragplate.catalog.profiles import EmbeddingProfile
from ragplate.infra.models.base import Embedder
from ragplate.infra.records import content as content_sql
from ragplate.infra.records.texts import RecordText
from ragplate.infra.records.vectors import (
    VectorRow,
    delete_vectors,
    ensure_model_index,
    write_vectors,
)
from ragplate.tasks.records.texts import (
    changed_texts,
    compose_text,
    embed_texts,
    store_vectors,
    text_hash,
)

ENTITY = SHIPPED[CMS_CONTENTS]
LOCALE = re.compile(r"^[a-z]{2,3}(-[A-Za-z0-9]{2,8})*$")

EmbedderFor = Callable[[EmbeddingProfile], Embedder]


def default_embedder(profile: EmbeddingProfile) -> Embedder:
    """The in-process embedder of a local profile (an ``openai_compatible`` one needs its
    server's settings: pass an ``embedder_for`` built from them)."""
    from ragplate.infra.models import make_embedder

    return make_embedder(profile)


def validate_content(
    *, tenant: str, status: str, translations: Mapping[str, tuple[str, str]]
) -> None:
    """Raise :class:`InvalidInputError` naming the field or value that is not acceptable."""
    if status not in CONTENT_STATUSES:
        raise InvalidInputError(
            f"status {status!r} is not one of {', '.join(CONTENT_STATUSES)}"
        )
    if not isinstance(tenant, str) or not tenant.strip():
        raise InvalidInputError("tenant must be a non-empty string ('global' for everyone)")
    if not translations:
        raise InvalidInputError("a content needs at least one translation")
    for locale, pair in translations.items():
        if not isinstance(locale, str) or not LOCALE.match(locale):
            raise InvalidInputError(f"locale {locale!r} is not a language tag such as en or it")
        title, body = pair
        if not isinstance(title, str) or not title.strip():
            raise InvalidInputError(f"translation {locale}: title is empty")
        if not isinstance(body, str):
            raise InvalidInputError(f"translation {locale}: body is not text")


def save_content(
    engine: Engine,
    *,
    key: int | None = None,
    tenant: str = "global",
    status: str,
    translations: Mapping[str, tuple[str, str]],
    profiles: Sequence[EmbeddingProfile],
    embedder_for: EmbedderFor | None = None,
) -> int:
    """Create (``key=None``) or replace the content ``key``; returns its key (the
    ``record_key`` of its vectors is ``str(key)``).

    ``translations`` maps a locale to ``(title, body)`` and replaces every translation:
    a locale left out is deleted with its vectors. A published content is embedded with
    every profile in ``profiles`` (texts whose stored hash is unchanged are skipped); a
    draft or archived one is not searchable and its vectors are deleted. ``embedder_for``
    builds the embedder of a profile (default: :func:`default_embedder`, local profiles).
    An unknown ``key`` raises :class:`InvalidInputError`.
    """
    validate_content(tenant=tenant, status=status, translations=translations)
    if key is not None:
        with engine.connect() as conn:
            exists = content_sql.content_exists(conn, key)
        if not exists:
            raise InvalidInputError(f"content {key} does not exist")
    record_key = "" if key is None else str(key)
    texts = []
    for locale, (title, body) in sorted(translations.items()):
        text = compose_text((title, body))
        texts.append(RecordText(ENTITY.name, record_key, locale, text, text_hash(text)))
    searchable = status in ENTITY.searchable_statuses
    build = embedder_for or default_embedder
    pending: list[tuple[EmbeddingProfile, list[VectorRow]]] = []
    for profile in profiles if searchable else ():
        todo = texts
        if key is not None:
            with engine.connect() as conn:
                todo = changed_texts(conn, texts, profile.key)
        embedded = embed_texts(todo, profile=profile, embedder=build(profile)) if todo else {}
        pending.append((profile, embedded.get(ENTITY.name, [])))
    with engine.begin() as conn:
        if key is None:
            saved = content_sql.insert_content(conn, tenant=tenant, status=status)
        else:
            updated = content_sql.update_content(conn, key, tenant=tenant, status=status)
            if updated is None:  # deleted while the texts were being embedded
                raise InvalidInputError(f"content {key} does not exist")
            saved = updated
        content_sql.replace_translations(conn, saved, translations)
        kept = [t.locale for t in texts] if searchable else []
        delete_vectors(conn, entity=ENTITY.name, record_keys=[str(saved)], keep_locales=kept)
        for profile, rows in pending:
            keyed = [VectorRow(str(saved), r.locale, r.text_hash, r.embedding) for r in rows]
            store_vectors(conn, {ENTITY.name: keyed}, profile=profile)
    return int(saved)


def delete_content(engine: Engine, *, key: int) -> bool:
    """Delete the content ``key``, its translations and its vectors of every model, in
    one transaction; False when it did not exist."""
    with engine.begin() as conn:
        delete_vectors(conn, entity=ENTITY.name, record_keys=[str(key)])
        return content_sql.delete_content(conn, key)


def load_published(engine: Engine, pairs: Sequence[tuple[str, str]], *,
                   profile: EmbeddingProfile, embedder: Embedder,
                   locales: Sequence[str] = ("en",), batch: int = 500) -> list[int]:
    """Bulk-load published global ``cms.contents`` records: each ``(title, body)`` pair
    in every locale of ``locales``, with its vectors of ``profile``, one transaction per
    ``batch`` records; the profile's HNSW index is ensured once at the end. For seeding
    benchmarks and tests, where :func:`save_content` one record at a time is too slow."""
    ids: list[int] = []
    for start in range(0, len(pairs), batch):
        part = pairs[start:start + batch]
        texts = [compose_text(pair) for pair in part]
        vectors = embedder.embed_passages(texts)
        with engine.begin() as conn:
            keys = content_sql.insert_contents(conn, len(part), tenant="global",
                                               status="published")
            content_sql.insert_translations(conn, [
                (k, loc, t, b) for k, (t, b) in zip(keys, part, strict=True)
                for loc in locales])
            write_vectors(conn, entity=ENTITY.name, profile=profile, rows=[
                VectorRow(str(k), loc, text_hash(text), vector)
                for k, text, vector in zip(keys, texts, vectors, strict=True)
                for loc in locales])
        ids += keys
    with engine.begin() as conn:
        ensure_model_index(conn, profile)
    return ids

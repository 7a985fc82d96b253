"""Demo content: ``cms.contents`` records made from the paragraphs of ragplate's own docs.

The text is real prose (ragplate's ``docs/*.md`` without front matter, code, tables and
markup), the title comes from the headings, and the result is deterministic for a given
``docs/``. ragplate's docs are in English only, so every requested locale gets the same
English text: the demo exercises translations and their vectors, not translation quality.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from sqlalchemy.engine import Engine

from ragplate.catalog.errors import InvalidInputError
from ragplate.catalog.people import check_tenant
from ragplate.catalog.profiles import EmbeddingProfile
from ragplate.catalog.settings import BUNDLED_DOCS
from ragplate.infra.records import content as content_sql
from ragplate.infra.records.vectors import (
    VectorRow,
    delete_entity_vectors,
    ensure_model_index,
    write_vectors,
)
from ragplate.tasks.indexing.front_matter import split_front_matter
from ragplate.tasks.records.content import ENTITY, LOCALE, EmbedderFor, default_embedder
from ragplate.tasks.records.search_index import refresh_records
from ragplate.tasks.records.texts import compose_text, text_hash

if TYPE_CHECKING:
    from ragplate.infra.records.es_search import ElasticsearchRecords

_FENCE = re.compile(r"^\s*(```|~~~)")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_LIST = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
_INLINE = [
    (re.compile(r"!\[([^\]]*)\]\([^)]*\)"), r"\1"),  # images: their alt text
    (re.compile(r"\[([^\]]+)\]\([^)]*\)"), r"\1"),  # links: their text
    (re.compile(r"`([^`]*)`"), r"\1"),
    (re.compile(r"\*\*(.+?)\*\*"), r"\1"),
    (re.compile(r"(?<![\w*])\*(?!\s)(.+?)(?<!\s)\*(?![\w*])"), r"\1"),
    (re.compile(r"<[^>]+>"), ""),
    (re.compile(r"\s+"), " "),
]
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z`\"(])")


@dataclass(frozen=True)
class DemoParagraph:
    """A title and a paragraph of prose, with the file it comes from."""

    title: str
    body: str
    source: str


@dataclass(frozen=True)
class SeedSummary:
    """What :func:`seed_demo` wrote."""

    records: int
    texts: int
    embedded: int
    first_key: int | None
    last_key: int | None
    seconds: float
    index_created: bool


def plain_text(line: str) -> str:
    """A Markdown line without inline markup."""
    for pattern, replacement in _INLINE:
        line = pattern.sub(replacement, line)
    return line.strip()


def markdown_paragraphs(text: str) -> list[tuple[list[str], str]]:
    """``(heading path, paragraph)`` of every prose paragraph; code blocks, tables and
    headings are left out and list items join their neighbours."""
    result: list[tuple[list[str], str]] = []
    headings: list[str] = []
    lines: list[str] = []
    fenced = False

    def flush() -> None:
        paragraph = plain_text(" ".join(lines))
        if paragraph:
            result.append((list(headings), paragraph))
        lines.clear()

    for raw in text.splitlines():
        if _FENCE.match(raw):
            flush()
            fenced = not fenced
            continue
        if fenced:
            continue
        heading = _HEADING.match(raw)
        if heading:
            flush()
            level = len(heading.group(1))
            headings[level - 1:] = [plain_text(heading.group(2))]
            continue
        stripped = raw.strip().lstrip(">").strip()
        if not stripped or stripped.startswith("|") or stripped.startswith("<!--"):
            flush()
            continue
        lines.append(_LIST.sub("", stripped))
    flush()
    return result


def _title(headings: list[str], fallback: str) -> str:
    names = [h for h in headings if h]
    if not names:
        return fallback
    if len(names) == 1:
        return names[0]
    return f"{names[0]}: {names[-1]}"


def _pieces(paragraph: str, max_words: int) -> list[str]:
    """A long paragraph cut at sentence ends into pieces of at most ``max_words``."""
    pieces: list[str] = []
    current: list[str] = []
    for sentence in _SENTENCE.split(paragraph):
        words = len(sentence.split())
        if current and len(" ".join(current).split()) + words > max_words:
            pieces.append(" ".join(current))
            current = []
        current.append(sentence)
    if current:
        pieces.append(" ".join(current))
    return pieces


def demo_paragraphs(
    docs_dir: Path = BUNDLED_DOCS, *, min_words: int = 20, max_words: int = 120
) -> list[DemoParagraph]:
    """The paragraphs of ``docs_dir/*.md`` in file order: short neighbours under one
    heading are merged up to ``min_words``, long ones cut at sentence ends."""
    result: list[DemoParagraph] = []

    def emit(title: str, text: str, source: str) -> None:
        if len(text.split()) >= 5:  # a lone "See below:" is not a record
            result.extend(DemoParagraph(title, p, source) for p in _pieces(text, max_words))

    for path in sorted(docs_dir.glob("*.md")):
        _, text = split_front_matter(path.name, path.read_text(encoding="utf-8"))
        pending: tuple[str, str] | None = None
        for headings, paragraph in markdown_paragraphs(text):
            title = _title(headings, path.stem.replace("-", " ").capitalize())
            if pending is not None and pending[0] == title:
                paragraph = f"{pending[1]} {paragraph}"
            elif pending is not None:
                emit(*pending, path.name)
            pending = (title, paragraph)
            if len(paragraph.split()) >= min_words:
                emit(title, paragraph, path.name)
                pending = None
        if pending is not None:
            emit(*pending, path.name)
    return result


def demo_records(count: int, paragraphs: Sequence[DemoParagraph]) -> list[tuple[str, str]]:
    """``count`` (title, body) pairs, cycling through ``paragraphs``; a title repeated by
    a later cycle gets a ``(2)``, ``(3)``… so every text is distinct."""
    if not paragraphs:
        raise InvalidInputError("no paragraphs to make demo records from")
    records = []
    for i in range(count):
        paragraph, cycle = paragraphs[i % len(paragraphs)], i // len(paragraphs)
        title = paragraph.title if cycle == 0 else f"{paragraph.title} ({cycle + 1})"
        records.append((title, paragraph.body))
    return records


def reset_demo(engine: Engine) -> int:
    """Delete every ``cms.contents`` record and its vectors; returns records deleted."""
    with engine.begin() as conn:
        delete_entity_vectors(conn, ENTITY.name)
        return content_sql.delete_all_contents(conn)


def check_seed_options(*, records: int, batch_size: int, locales: Sequence[str],
                       tenant: str) -> None:
    """Refuse options ``seed_demo`` cannot honour, before any work is done."""
    if records < 1 or batch_size < 1:
        raise InvalidInputError("--records and the batch size must be at least 1")
    bad = [loc for loc in locales if not LOCALE.match(loc)]
    if bad or not locales:
        raise InvalidInputError("--locales must be language tags such as en,it (got "
                                f"{', '.join(repr(b) for b in bad) or 'none'})")
    repeated = sorted({loc for loc in locales if list(locales).count(loc) > 1})
    if repeated:
        # A record has one translation per locale: a second would collide with the first.
        raise InvalidInputError(f"--locales names {', '.join(repeated)} more than once")
    if not tenant.strip():
        raise InvalidInputError("--tenant must be a non-empty string")
    # The same rule as a person's tenant: records no person can belong to serve no one.
    check_tenant(tenant)


def seed_demo(
    engine: Engine,
    *,
    records: int,
    profiles: Sequence[EmbeddingProfile],
    locales: Sequence[str] = ("en",),
    tenant: str = "global",
    batch_size: int = 32,
    docs_dir: Path = BUNDLED_DOCS,
    embedder_for: EmbedderFor | None = None,
    on_progress: Callable[[int, int], None] | None = None,
    search_index: ElasticsearchRecords | None = None,
) -> SeedSummary:
    """Add ``records`` published contents (one translation per locale) and their vectors
    for every profile in ``profiles`` (the serving one, plus a switch's target).

    Each batch is embedded first, then written in one transaction (records, translations
    and a binary COPY of the vectors), so a record is never visible without its vectors.
    The HNSW index of each profile is built once at the end if it was missing: building it
    after the bulk load is several times faster than maintaining it row by row. With
    ``search_index`` (Elasticsearch), each batch's search documents are written after its
    transaction.
    """
    check_seed_options(records=records, batch_size=batch_size, locales=locales,
                       tenant=tenant)
    started = time.perf_counter()
    build = embedder_for or default_embedder
    embedders = [(profile, build(profile)) for profile in profiles]
    pairs = demo_records(records, demo_paragraphs(docs_dir))
    keys: list[int] = []
    embedded = 0
    for start in range(0, len(pairs), batch_size):
        batch = pairs[start:start + batch_size]
        texts = [compose_text(pair) for pair in batch]
        vectors: list[np.ndarray] = []
        for _, embedder in embedders:
            # Locales share the English text: embed it once for all of them.
            vectors.append(np.asarray(embedder.embed_passages(texts)))
            embedded += len(texts)
        with engine.begin() as conn:
            ids = content_sql.insert_contents(conn, len(batch), tenant=tenant,
                                              status="published")
            content_sql.insert_translations(conn, [
                (k, loc, t, b) for k, (t, b) in zip(ids, batch, strict=True)
                for loc in locales])
            for (profile, _), matrix in zip(embedders, vectors, strict=True):
                rows = [VectorRow(str(k), loc, text_hash(text), vector)
                        for k, text, vector in zip(ids, texts, matrix, strict=True)
                        for loc in locales]
                write_vectors(conn, entity=ENTITY.name, profile=profile, rows=rows)
        keys += ids
        refresh_records(search_index, engine, ENTITY, profiles, keys=[str(k) for k in ids])
        if on_progress is not None:
            on_progress(len(keys), len(pairs))
    created = False
    for profile, _ in embedders:
        with engine.begin() as conn:
            created = ensure_model_index(conn, profile) or created
    with engine.begin() as conn:
        # Fresh statistics, or the planner may think the new rows are few and skip the index.
        content_sql.analyze_contents(conn)
    return SeedSummary(records=len(keys), texts=len(keys) * len(locales), embedded=embedded,
                       first_key=keys[0] if keys else None, last_key=keys[-1] if keys else None,
                       seconds=time.perf_counter() - started, index_created=created)

"""Which words each chunk is counted as holding: what the stores' word counts (the
assistant's coverage check weighs a question's words by them) are made of.

A chunk is read as the assistant reads a hit (:func:`counted_terms`): in its locale's
language, or, without one (``und``), in the language its stop words tell
(:func:`guess_language`), or in every language when none can be told (:func:`qualified`
terms). Each chunk's terms
also hold ``""`` (so the count of ``""`` is the index's chunk count) and the mark of the
reading that read them (:func:`reading_mark`): the stemmer's release and the stop-word and
accent lists. An index whose chunks were read otherwise (another release) holds fewer marks
of the current reading than chunks, and its counts are not used (:func:`counts_of`) until
the next ``index-docs`` has read them again from their stored text (a store's
``recount_words``; nothing is re-embedded).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
from collections.abc import Mapping, Sequence
from functools import lru_cache
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from ragplate.catalog.schema import DOCS_SEARCH_TEXT_CHARS
from ragplate.catalog.text_search import LANGUAGES, SIMPLE
from ragplate.infra.stores.lexical import (
    STOP_WORDS,
    _tsearch_data,
    chunk_language,
    field_text,
    fold,
    stop_words,
    tokens,
    words,
)

logger = logging.getLogger(__name__)

#: Changed whenever ragplate reads words otherwise (the tokens, the folding, the stems).
READING_VERSION = 1


@lru_cache(maxsize=1)
def stop_lists() -> dict[str, frozenset[str]]:
    """Each language's stop words, folded as the words of a text are (``è`` -> ``e``),
    for the languages that have a list (Romanian has none). Without the server's lists
    there is nothing to tell languages by: the short English fallback list would take an
    Italian text with an "a" or an "in" for English, so no language is told."""
    if all(stop_words(name) is STOP_WORDS for name in LANGUAGES.values()):
        logger.warning("no text-search stop word lists: the language of a question or a "
                       "page without a locale cannot be told")
        return {}
    lists = {name: frozenset(fold(word) for word in stop_words(name))
             for name in sorted(set(LANGUAGES.values()))}
    return {name: stops for name, stops in lists.items() if stops}


def guess_language(text: str, *, prefer: str | None = None) -> str | None:
    """The language (a Snowball stemmer's name) whose stop words ``text`` holds most;
    among languages holding as many, ``prefer`` when it is one of them; ``None`` when
    ``text`` holds no stop word or the tie stays (a bare identifier)."""
    read = words(text)
    counts = {name: sum(1 for word in read if word in stops)
              for name, stops in stop_lists().items()}
    best = max(counts.values(), default=0)
    if best == 0:
        return None
    leaders = [name for name, count in counts.items() if count == best]
    if len(leaders) == 1:
        return leaders[0]
    return prefer if prefer in leaders else None


@lru_cache(maxsize=1)
def reading_mark() -> str:
    """The mark of the current reading: a term no text holds (words have no space)."""
    try:
        stemmer = version("snowballstemmer")
    except PackageNotFoundError:
        stemmer = "unknown"
    # snowballstemmer hands the stemming to PyStemmer when that is installed.
    with contextlib.suppress(PackageNotFoundError):
        stemmer += "|" + version("PyStemmer")
    languages = ",".join(f"{code}={name}" for code, name in sorted(LANGUAGES.items()))
    digest = hashlib.sha256(f"{READING_VERSION}|{stemmer}|{languages}".encode())
    data = _tsearch_data()
    if data is not None:
        for path in [*sorted(data.glob("*.stop")), data / "unaccent.rules"]:
            digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return f" reading:{digest.hexdigest()[:16]}"


def qualified(language: str, word: str) -> str:
    """A word as a chunk whose language cannot be told is counted under it when read in
    ``language`` (no word holds a colon)."""
    return f"{language}:{word}"


def counted_terms(source: str, text: str, metadata: Mapping[str, Any]) -> list[str]:
    """The terms one chunk is counted under: ``""``, the reading's mark, and its distinct
    words (the first :data:`~ragplate.catalog.schema.DOCS_SEARCH_TEXT_CHARS` characters of
    its text, its source label and breadcrumb) as the assistant reads a hit: in its locale's
    language, or without one in the language its text tells; when none can be told (code,
    identifiers), the assistant reads it in the question's language, so it is counted
    under every language's reading, each word :func:`qualified` by its language (a
    question in one language asks for its words both plain and qualified by it)."""
    head, fields = text[:DOCS_SEARCH_TEXT_CHARS], field_text(source, metadata)
    name = chunk_language(metadata)
    if name == SIMPLE:
        name = guess_language(text) or SIMPLE
    if name != SIMPLE or not stop_lists():
        held = {term for part in (head, fields) for term in tokens(part, name)}
    else:
        held = {qualified(each, term) for each in stop_lists() for part in (head, fields)
                for term in tokens(part, each)}
    return ["", reading_mark(), *sorted(held)]


def counts_of(found: Mapping[str, int], terms: Sequence[str], *, where: str
              ) -> tuple[int, dict[str, int]] | None:
    """A store's answer from ``found`` (its counts of ``""``, the reading's mark and
    ``terms``): ``None`` when some chunk was not read by the current reading (a chunk
    written by another release), said once per ``where`` in the log."""
    total = int(found.get("", 0))
    if int(found.get(reading_mark(), 0)) != total:
        if where not in _WARNED:
            _WARNED.add(where)
            logger.warning("%s holds chunks whose words another release read: the assistant "
                           "weighs every word alike there until the next `ragplate index-docs` "
                           "counts them again", where)
        return None
    return total, {t: int(found.get(t, 0)) if t and not t.startswith(" ") else 0
                   for t in terms}


#: Where a mixed reading was already said.
_WARNED: set[str] = set()

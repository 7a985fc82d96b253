"""Keyword (lexical) scoring for the documentation stores: BM25 per label.

Documentation retrieval returns one hit per label (a source, or a user-index safe label),
so keyword search scores labels, not chunks: a label's term frequencies are the sums over
its chunks and its length the sum of their lengths. Scoring chunks instead would favour a
long document, which has many chunks to draw a lucky one from.

PostgreSQL does it in SQL over the generated ``rag_chunks.search`` tsvector (English
stemming, see migration 0004); the memory and filesystem drivers use :func:`bm25_scores`,
the same formula over a simpler tokenisation (lower-case letters and digits, English stop
words dropped, no stemming). Both count a word of the chunk's source label or heading
breadcrumb ``1 + FIELD_BOOST`` times, and both use the usual ``k1 = 1.2``, ``b = 0.75``;
a document's length is its number of distinct words per chunk, summed (PostgreSQL's
``length(tsvector)``).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from ragplate.catalog.schema import DOCS_SEARCH_TEXT_CHARS

K1 = 1.2
B = 0.75
#: A word of the source label or breadcrumb counts this many times (plus its own once).
FIELD_BOOST = 2

_TOKEN = re.compile(r"[a-z0-9]+")
STOP_WORDS: frozenset[str] = frozenset((
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "can", "do", "does", "for", "from",
    "has", "have", "how", "i", "if", "in", "into", "is", "it", "its", "me", "my", "no", "not",
    "of", "on", "or", "our", "so", "than", "that", "the", "their", "them", "then", "there",
    "these", "they", "this", "to", "was", "we", "what", "when", "where", "which", "who", "why",
    "will", "with", "you", "your",
))


def tokens(text: str) -> list[str]:
    """Lower-case words of ``text`` (letters and digits; ``_``, ``-``, ``:`` and ``/``
    separate words), stop words dropped."""
    return [t for t in _TOKEN.findall(text.lower()) if t not in STOP_WORDS]


def field_text(source: str, metadata: Mapping[str, Any]) -> str:
    """The boosted field of a chunk: its source label and heading breadcrumb."""
    crumb = metadata.get("heading_breadcrumb")
    parts = [source, *(str(p) for p in crumb)] if isinstance(crumb, list) else [source]
    return " ".join(parts)


def term_counts(source: str, text: str, metadata: Mapping[str, Any]) -> Counter[str]:
    """Term frequencies of one chunk, field words boosted; as in PostgreSQL, only the
    first :data:`~ragplate.catalog.schema.DOCS_SEARCH_TEXT_CHARS` characters of its text."""
    counts = Counter(tokens(text[:DOCS_SEARCH_TEXT_CHARS]))
    for word in tokens(field_text(source, metadata)):
        counts[word] += 1 + FIELD_BOOST
    return counts


def bm25_scores(query: str, documents: Sequence[Counter[str]],
                lengths: Sequence[float] | None = None) -> list[float]:
    """BM25 score of every document (term counts) for ``query``; 0.0 for no match.

    ``idf = ln(1 + (N - df + 0.5) / (df + 0.5))``; document length = ``lengths`` or,
    without them, distinct terms (as
    PostgreSQL's ``length(tsvector)``, summed over chunks by the caller), so the two
    drivers rank alike.
    """
    terms = list(dict.fromkeys(tokens(query)))
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

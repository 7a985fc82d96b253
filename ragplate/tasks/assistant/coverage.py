"""How much of a question its evidence covers: the extractive answerer's second check.

The evidence floor compares embeddings, and an everyday question put the way people ask
for help ("Is it safe to cook chicken straight from frozen?") can reach it; the extractive
answerer then quotes any sentence holding one of its words. Coverage asks more of the
evidence: the share of the question's content words (stop words dropped, stemmed in the
question's language) that the evidence holds anywhere — each hit's own chunk (the one the
retrieval found nearest), source label and heading breadcrumb. A documentation question
put in other words still shares a good part of them; an everyday one shares a word or two
by chance. The answerer also quotes a source's other chunks; they are not read here: more
text holds more words by chance (over the laraplate questions, reading them let 27 of 100
English everyday questions through instead of 16, and answered no more documentation
questions).

A second figure weighs each word by how rare it is in the index (its inverse document
frequency, as every driver counts them, except an Elasticsearch index still holding
chunks written before they carried their words;
``RAGPLATE_ASSISTANT_MIN_WEIGHTED_COVERAGE``): "Is it safe to cook chicken straight from
frozen?" shares "safe" with a page, two of its five words by count, but "safe" is common and
"chicken" and "frozen" are in no page; a documentation question shares the words that
single its page out. Over the laraplate questions with ragplate's docs beside, on the half
the threshold was not chosen on, it let 2 of 6 answered English everyday questions through,
and kept 66 of 69 answered documentation questions (49 of the 50 citing an expected page).
The question's words are read here as the store's counts read every chunk when it was
written (:func:`~ragplate.infra.stores.word_counts.counted_terms`, which reads a hit as
this module does), so a path, a version number or a stem is counted as the question reads
it. On the user index
every word weighs alike: its counts would include pages the person may not see.

Words can only be compared within one language: the question's language is guessed from
its stop words (a tie goes to the person's locale), and a hit's is its locale's, or
guessed from its text when its locale names none (``und``). A hit whose language cannot be
told (code, a table of identifiers) counts as evidence too. When the question's language
cannot be told (no stop word, a tie, or the server's stop-word lists cannot be read), or
no hit is in it (an Italian question over English pages), there is no figure and the
check does not apply: the floor stays the only relevance check there.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from ragplate.catalog.schema import DOCS_SEARCH_TEXT_CHARS
from ragplate.catalog.text_search import SIMPLE, language
from ragplate.infra.stores.lexical import chunk_language, tokens, words
from ragplate.infra.stores.word_counts import guess_language, qualified, stop_lists
from ragplate.tasks.retrieval.documentation import Hit


def hit_language(hit: Hit) -> str | None:
    """The language a hit is read in: its locale's, else guessed from its text (not the
    person's, which the answerer reads it in: a page without a locale is often English
    whoever asks)."""
    named = chunk_language(hit.metadata)
    return named if named != SIMPLE else guess_language(hit.text or hit.excerpt)


def _content_words(question: str, name: str) -> set[str]:
    """The question's words, stemmed, without the language's stop words, accented ones
    included (``perché``, ``più``): :func:`tokens` drops them as PostgreSQL does, unfolded,
    which keeps those as words."""
    stops = stop_lists()[name]
    return set(tokens(" ".join(w for w in words(question) if w not in stops), name))


#: How many chunks an index holds, and how many of them hold each of some words (``None``
#: when the store cannot tell).
Frequencies = Callable[[list[str]], tuple[int, dict[str, int]] | None]


def question_coverage(question: str, hits: Sequence[Hit], *,
                      locale: str | None = None) -> float | None:
    """The share of ``question``'s content words that the hits in its language (or in
    none that can be told) hold in their own chunk, source label and breadcrumb. ``None``
    when the question's language cannot be told, it has no content word, or no hit is in
    its language. ``locale`` (the person's) breaks a tie between languages."""
    read = _asked_and_held(question, hits, locale)
    if read is None:
        return None
    _, asked, held = read
    return len(asked & held) / len(asked)


def weighted_coverage(question: str, hits: Sequence[Hit], *, locale: str | None = None,
                      frequencies: Frequencies) -> float | None:
    """:func:`question_coverage` with each word weighing by how rare it is among the
    index's chunks (``frequencies``, see :func:`weighted_share`): an everyday question
    shares with a page the words every page has ("safe", "change", "run"), a documentation
    question the words that make its page the one. ``None`` also when the store cannot
    count the words."""
    read = _asked_and_held(question, hits, locale)
    if read is None:
        return None
    name, asked, held = read
    # A chunk whose language cannot be told is counted under each language's reading
    # ("english:index"): here it is read in the question's, so both counts add up.
    either = {word: qualified(name, word) for word in asked}
    counted = frequencies(sorted({*asked, *either.values()}))
    if counted is None:
        return None
    total, counts = counted
    return weighted_share(asked, held, total, {
        word: counts.get(word, 0) + counts.get(either[word], 0) for word in asked})


def _asked_and_held(question: str, hits: Sequence[Hit], locale: str | None
                    ) -> tuple[str, set[str], set[str]] | None:
    """The question's language, its content words and the words of the hits read in that
    language (as far as the stores count a chunk's words: its first
    :data:`~ragplate.catalog.schema.DOCS_SEARCH_TEXT_CHARS` characters)."""
    name = guess_language(question, prefer=language(locale) if locale else None)
    if name is None:
        return None
    asked = _content_words(question, name)
    read = [(hit, hit_language(hit)) for hit in hits]
    if not asked or not any(told == name for _, told in read):
        return None
    held: set[str] = set()
    for hit, told in read:
        if told in (name, None):
            held.update(tokens((hit.text or hit.excerpt)[:DOCS_SEARCH_TEXT_CHARS], name))
            held.update(tokens(" ".join((hit.source_label, *hit.heading_breadcrumb)), name))
    return name, asked, held


def weighted_share(asked: set[str], held: set[str], total: int,
                   counts: dict[str, int]) -> float:
    """The share of ``asked`` that ``held`` holds, each word weighing its inverse document
    frequency ``ln((total + 1) / (count + 1))`` among ``total`` chunks (a word no chunk
    holds weighs most). When no word weighs anything (each is in every chunk) every word
    weighs alike."""
    weights = {w: math.log((total + 1) / (counts.get(w, 0) + 1)) for w in asked}
    whole = sum(weights.values())
    if whole <= 0:
        return len(asked & held) / len(asked)
    return sum(weights[w] for w in asked & held) / whole

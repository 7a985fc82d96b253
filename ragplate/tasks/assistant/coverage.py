"""How much of a question its evidence covers: the extractive answerer's second check.

The evidence floor compares embeddings, and an everyday question put the way people ask
for help ("Is it safe to cook chicken straight from frozen?") can reach it; the extractive
answerer then quotes any sentence holding one of its words. Coverage asks more of the
evidence: the share of the question's content words (stop words dropped, stemmed in the
question's language) that the evidence holds anywhere — its chunks, source labels and
heading breadcrumbs, read in the same language. A documentation question put in other
words still shares a good part of them; an everyday one shares a word or two by chance.

Words can only be compared within one language: the question's language is guessed from
its stop words, and a hit's is its locale's, or guessed from its text when its locale
names none (``und``). When no language can be told, or no hit is in the question's
language (an Italian question over English pages), there is no figure and the check does
not apply: the floor stays the only relevance check there.
"""

from __future__ import annotations

from collections.abc import Sequence

from ragplate.catalog.documents import breadcrumb_text
from ragplate.catalog.text_search import LANGUAGES, SIMPLE, language
from ragplate.infra.stores.lexical import stop_words, tokens, words
from ragplate.tasks.retrieval.documentation import Hit

#: The languages a text's stop words can tell apart (those with a Snowball stemmer).
_GUESSED = tuple(sorted(set(LANGUAGES.values())))


def guess_language(text: str) -> str | None:
    """The language (a Snowball stemmer's name) whose stop words ``text`` holds most,
    when it holds more of them than of any other language's; ``None`` when none wins
    (a bare identifier, a tie, or stop-word lists that cannot be read)."""
    read = words(text)
    counts = sorted(((sum(1 for word in read if word in stop_words(name)), name)
                     for name in _GUESSED), reverse=True)
    (best, name), (second, _) = counts[0], counts[1]
    return name if best > second else None


def hit_language(hit: Hit) -> str | None:
    """The language a hit is read in: its locale's, else guessed from its text."""
    locale = hit.metadata.get("locale")
    named = language(locale if isinstance(locale, str) else None)
    return named if named != SIMPLE else guess_language(hit.text or hit.excerpt)


def _evidence_words(hit: Hit) -> str:
    label = hit.source_label.replace("/", " ")
    return " ".join((hit.text or hit.excerpt, label, breadcrumb_text(hit.heading_breadcrumb)))


def question_coverage(question: str, hits: Sequence[Hit]) -> float | None:
    """The share of ``question``'s content words that the hits in its language hold;
    ``None`` when the question's language cannot be told, it has no content word, or no
    hit is in its language."""
    name = guess_language(question)
    if name is None:
        return None
    asked = set(tokens(question, name))
    same = [hit for hit in hits if hit_language(hit) == name]
    if not asked or not same:
        return None
    held: set[str] = set()
    for hit in same:
        held.update(tokens(_evidence_words(hit), name))
    return len(asked & held) / len(asked)

"""Query classes: the shape of a query, which the retrieval tuning profile may fuse
differently. Pure functions; application search and ``tune-retrieval`` call the same
:func:`classify`, so a class measured offline is the class applied at run time.

In this precedence:

| class | condition |
|---|---|
| ``identifier`` | a token with a digit (``INV-1042``, ``404``), a UUID or an email |
| ``short_keyword`` | at most two significant (non-stopword) words |
| ``multi_term`` | three to five significant words and fewer than two stopwords |
| ``natural_language`` | anything else (longer, or two stopwords or more) |

Short words and acronyms (``VAT``, ``PDF``) are words, not codes: only digits, UUIDs and
emails make an identifier. Stopwords are English and Italian, the locales the shipped
corpora use; a word of another language counts as significant.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ragplate.catalog.search_tuning import QUERY_CLASSES, QueryClass

__all__ = ["QUERY_CLASSES", "QueryAnalysis", "QueryClass", "analyse", "class_counts",
           "classify"]

_TOKEN = re.compile(r"\S+")
_WORD = re.compile(r"\w+", re.UNICODE)
_EDGE = re.compile(r"^[^\w@]+|[^\w]+$", re.UNICODE)
_EMAIL = re.compile(r"^[\w.+-]+@[\w-]+(?:\.[\w-]+)+$", re.UNICODE)
_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$", re.I)

_STOPWORDS = """
a about after all also am an and any are as at be been before but by can could did do does
for from had has have he her his how i if in into is it its me my no not of on or our she
should so than that the their them then there these they this to up us was we were what
when where which who why will with would you your
al alla alle allo ai agli che chi ci come con cosa da dal dalla dei del della delle di e è
gli ha ho i il in la le lo ma mi mio nel nella non o per perché più quale quando se si
sono su sul sulla ti tra un una uno
"""
STOPWORDS: frozenset[str] = frozenset(_STOPWORDS.split())


@dataclass(frozen=True)
class QueryAnalysis:
    """What :func:`classify` looked at (for tests and diagnostics)."""

    significant: int
    stopwords: int
    identifier: bool


def _is_identifier(token: str) -> bool:
    token = _EDGE.sub("", token)
    if not token:
        return False
    return bool(_EMAIL.match(token) or _UUID.match(token) or re.search(r"\d", token))


def analyse(query: str) -> QueryAnalysis:
    """Count the significant words and the stopwords; spot identifier tokens."""
    identifier = any(_is_identifier(token) for token in _TOKEN.findall(query))
    words = [w.lower() for w in _WORD.findall(query)]
    stop = sum(1 for w in words if w in STOPWORDS)
    return QueryAnalysis(significant=len(words) - stop, stopwords=stop, identifier=identifier)


def classify(query: str) -> QueryClass:
    """The class of ``query`` (see the module docstring for the rules)."""
    analysis = analyse(query)
    if analysis.identifier:
        return "identifier"
    if analysis.significant <= 2:
        return "short_keyword"
    if analysis.significant <= 5 and analysis.stopwords < 2:
        return "multi_term"
    return "natural_language"


def class_counts(classes: Iterable[QueryClass]) -> dict[str, int]:
    """How many of ``classes`` fall in each class, every class listed (in class order)."""
    counted: Mapping[str, int] = Counter(classes)
    return {name: int(counted.get(name, 0)) for name in QUERY_CLASSES}

"""Grouping unanswered questions into topics by the similarity of their vectors.

Pure functions over vectors (the report embeds the questions and searches the store):

- :func:`distinct_wordings` folds the same question typed twice (case, spacing) into one
  wording with a count, most asked first;
- :func:`group` is complete-linkage agglomerative clustering on cosine: two groups merge
  only while *every* pair of their wordings reaches :data:`THRESHOLD`, so a topic never
  chains through a middle question into something unrelated;
- :func:`representative` picks the wording closest to the topic's (count-weighted)
  centroid.

What is compared is a wording's content words (:func:`topic_words`: its language's stop
words left out), embedded as a query. The whole question's vector mostly says "a short
how-do-I question in English": ``multilingual-e5-small`` puts unrelated ones at cosine
0.85-0.90 ("How do I change my time zone?" / "How do I cancel my subscription?").

Why 0.85, measured on ``datasets/analytics-topics.json`` (40 help-centre intents, 4
wordings each, English and Italian; 20 topics held out as the test half by the SHA-256 of
their id, as datasets are split), as pairwise precision / recall of wordings put
together:

- chosen on the tuning half, as the best F0.5 of 0.80-0.91 (precision weighs double: a
  topic that hides a second gap behind the wrong representative costs a reader more than
  a topic split in two): 0.733 / 0.367 (whole questions at the former 0.83: 0.478 /
  0.458);
- on the test half: 0.774 / 0.400 (whole questions at 0.83: 0.659 / 0.500).

Topics are not pure at any useful threshold: the page lists each topic's wordings, so a
reader sees what was put together. Complete linkage keeps a topic from chaining through a
middle question into something unrelated; Italian and English wordings of one intent are
often apart (the pairs across languages are half of those the recall counts).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np

from ragplate.infra.stores.lexical import words
from ragplate.infra.stores.word_counts import guess_language, stop_lists

#: The cosine every pair of wordings in one topic reaches (see the module docstring);
#: measured for the default model, multilingual-e5-small: measure it again for another.
THRESHOLD = 0.85
#: The most distinct wordings grouped in one report (the most asked first): clustering is
#: cubic in them, and a window holding more is a window to narrow with --since.
MAX_WORDINGS = 2000


def topic_words(question: str) -> str:
    """What a wording is grouped by: its words but the stop words of the language it is
    told to be in (the whole question when that leaves nothing, or no language is told)."""
    language = guess_language(question)
    stops = stop_lists().get(language, frozenset()) if language else frozenset()
    kept = [word for word in words(question) if word not in stops]
    return " ".join(kept) if kept and language else question


def normalised(text: str) -> str:
    """The form two wordings are compared in: spacing collapsed, case folded."""
    return " ".join(text.split()).casefold()


def distinct_wordings(questions: Sequence[str]) -> list[tuple[str, int]]:
    """``(wording, count)`` per distinct question (compared :func:`normalised`), most asked
    first, ties in the order first seen; the wording shown is its most frequent spelling
    (of equally frequent ones, the last seen: records come oldest first)."""
    spellings: dict[str, Counter[str]] = {}
    for question in questions:
        key = normalised(question)
        if key:
            spellings.setdefault(key, Counter())[" ".join(question.split())] += 1
    totals = {key: sum(seen.values()) for key, seen in spellings.items()}
    # dicts keep the order first seen, and sorted() is stable: ties stay in that order.
    return [(_spelling(spellings[key]), totals[key])
            for key in sorted(totals, key=lambda key: -totals[key])]


def _spelling(seen: Counter[str]) -> str:
    most = max(seen.values())
    return [text for text, n in seen.items() if n == most][-1]


def unit(vectors: np.ndarray) -> np.ndarray:
    """Each row scaled to length 1 (a zero row stays zero)."""
    matrix = np.atleast_2d(np.asarray(vectors, dtype=np.float64))
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return np.divide(matrix, norms, out=np.zeros_like(matrix), where=norms > 0)


def group(vectors: np.ndarray, threshold: float = THRESHOLD) -> list[list[int]]:
    """Complete-linkage clusters of the rows of ``vectors`` whose every pair has cosine ≥
    ``threshold``: lists of row indices, each ascending, ordered by their first row.
    Deterministic: of equally similar pairs the first (in row order) merges first."""
    count = len(vectors)
    if count == 0:
        return []
    matrix = unit(vectors)
    # Between two clusters, the similarity of their least similar pair (complete linkage);
    # a merged-away cluster's row and column are set to -inf so it is never picked again.
    linkage = matrix @ matrix.T
    np.fill_diagonal(linkage, -np.inf)
    members: list[list[int] | None] = [[i] for i in range(count)]
    while count > 1:
        flat = int(np.argmax(linkage))
        a, b = divmod(flat, len(members))
        if linkage[a, b] < threshold:
            break
        keep, gone = min(a, b), max(a, b)
        merged = np.minimum(linkage[keep], linkage[gone])
        linkage[keep, :] = merged
        linkage[:, keep] = merged
        linkage[keep, keep] = -np.inf
        linkage[gone, :] = -np.inf
        linkage[:, gone] = -np.inf
        kept, dropped = members[keep], members[gone]
        assert kept is not None and dropped is not None
        members[keep] = sorted(kept + dropped)
        members[gone] = None
        count -= 1
    return sorted((m for m in members if m is not None), key=lambda m: m[0])


def centroid(vectors: np.ndarray, rows: Sequence[int],
             weights: Sequence[float] | None = None) -> np.ndarray:
    """The unit mean of the unit rows ``rows`` of ``vectors``, each weighted (by how many
    times its wording was asked; equal weights without ``weights``)."""
    matrix = unit(vectors)[list(rows)]
    scale = np.ones(len(rows)) if weights is None else np.asarray(
        [weights[r] for r in rows], dtype=np.float64)
    return unit((matrix * scale[:, None]).sum(axis=0))[0]


def representative(vectors: np.ndarray, rows: Sequence[int],
                   weights: Sequence[float] | None = None) -> int:
    """The row of ``rows`` closest (cosine) to their weighted :func:`centroid`; of equally
    close rows the first."""
    centre = centroid(vectors, rows, weights)
    similarities = unit(vectors)[list(rows)] @ centre
    return list(rows)[int(np.argmax(similarities))]


def pairwise_scores(clusters: Sequence[Sequence[int]], truth: Sequence[str]
                    ) -> tuple[float, float, float]:
    """``(precision, recall, F1)`` of the pairs ``clusters`` put together against the
    pairs of equal labels in ``truth`` (one label per row): how a threshold is judged on
    a labelled paraphrase set."""
    found = {row: n for n, rows in enumerate(clusters) for row in rows}
    together = same = both = 0
    for i in range(len(truth)):
        for j in range(i + 1, len(truth)):
            predicted, actual = found[i] == found[j], truth[i] == truth[j]
            together += predicted
            same += actual
            both += predicted and actual
    precision = both / together if together else 1.0
    recall = both / same if same else 1.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return precision, recall, f1

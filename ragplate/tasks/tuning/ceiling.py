"""How far fusing rankings can go: the best rank any monotone fusion can give a relevant
label, as pure functions over label rankings.

A fusion is monotone when a label that every ranking places above another is never fused
below it: reciprocal rank fusion with any ``k`` and weights, and any weighted sum of
normalised scores, are. For one case, the best rank such a fusion can give a relevant
label ``r`` is one plus the number of non-relevant labels ranked above ``r`` in *every*
ranking (they stay above ``r`` whatever the fusion). The mean reciprocal rank of those
best ranks bounds every monotone fusion of the same rankings, even one tuned per case;
when it is below a goal, no fusion tuning reaches the goal and only a new signal
(a better model, a reranker) can.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from ragplate.tasks.retrieval.fusion import rrf_scores


def first_relevant_rank(ranking: Sequence[str], relevant: Collection[str]) -> int | None:
    """The 1-based rank of the first relevant label, ``None`` without one."""
    for rank, label in enumerate(ranking, start=1):
        if label in relevant:
            return rank
    return None


def ceiling_rank(rankings: Sequence[Sequence[str]], relevant: Collection[str]) -> int | None:
    """The best rank any monotone fusion of ``rankings`` can give a relevant label;
    ``None`` when no ranking holds one. A label a ranking lacks counts as below every
    label it holds."""
    positions = [{label: i for i, label in enumerate(ranking)} for ranking in rankings]
    labels = {label for ranking in rankings for label in ranking}
    missing = len(labels)

    def above(other: str, target: str) -> bool:
        return all(p.get(other, missing) < p.get(target, missing) for p in positions)

    best = None
    for target in labels & set(relevant):
        rank = 1 + sum(1 for other in labels - set(relevant) if above(other, target))
        best = rank if best is None else min(best, rank)
    return best


def best_single_rank(rankings: Sequence[Sequence[str]], relevant: Collection[str]) -> int | None:
    """The rank of the first relevant label in the best of ``rankings`` for this case:
    what choosing one ranking per case, knowing the answer, would give."""
    ranks = [r for r in (first_relevant_rank(x, relevant) for x in rankings) if r is not None]
    return min(ranks) if ranks else None


def reciprocal_at(rank: int | None, k: int) -> float:
    """``1/rank`` when the rank is within the first ``k``, else 0."""
    return 1.0 / rank if rank is not None and rank <= k else 0.0


def weighted_rrf(rankings: Sequence[Sequence[str]], weights: Sequence[float],
                 k: float) -> list[str]:
    """Labels by ``Σ weight / (k + rank)`` over the rankings that hold them, best first
    (ties keep first appearance; :func:`~ragplate.tasks.retrieval.fusion.reciprocal_rank_fusion`
    breaks them by best rank)."""
    scores, _ = rrf_scores(rankings, k=k, weights=weights)
    return sorted(scores, key=lambda label: -scores[label])

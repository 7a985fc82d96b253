"""Rank fusion: pure functions over ranked id lists (no database, no model)."""

from __future__ import annotations

from collections.abc import Sequence

#: The usual reciprocal-rank-fusion constant: it damps the weight of the very first ranks.
RRF_K = 60


def reciprocal_rank_fusion(
    rankings: Sequence[Sequence[str]], *, k: int = RRF_K
) -> list[tuple[str, float]]:
    """Fuse ranked lists of ids: ``score(id) = Σ 1 / (k + rank)`` over the lists that hold
    it (rank from 1). Sorted by score, ties broken by the best rank in any list, then by the
    order of first appearance, so the result is deterministic."""
    scores: dict[str, float] = {}
    best: dict[str, int] = {}
    for ranking in rankings:
        for rank, item in enumerate(dict.fromkeys(ranking), start=1):
            scores[item] = scores.get(item, 0.0) + 1.0 / (k + rank)
            best[item] = min(best.get(item, rank), rank)
    order = {item: i for i, item in enumerate(scores)}
    return sorted(scores.items(), key=lambda kv: (-kv[1], best[kv[0]], order[kv[0]]))

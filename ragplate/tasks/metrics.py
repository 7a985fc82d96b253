"""Retrieval metrics as pure functions over ranked labels (binary relevance)."""

from __future__ import annotations

import math
from collections.abc import Sequence


def hit_at_k(ranked: Sequence[str], relevant: Sequence[str], k: int) -> float:
    """1.0 when any relevant label is among the first ``k`` ranked labels."""
    wanted = set(relevant)
    return 1.0 if any(label in wanted for label in ranked[:k]) else 0.0


def reciprocal_rank(ranked: Sequence[str], relevant: Sequence[str], k: int) -> float:
    """1 / rank of the first relevant label within the first ``k``, else 0."""
    wanted = set(relevant)
    for position, label in enumerate(ranked[:k], 1):
        if label in wanted:
            return 1.0 / position
    return 0.0


def mean(values: Sequence[float]) -> float:
    """Arithmetic mean; 0.0 for no values."""
    return sum(values) / len(values) if values else 0.0


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (``q`` in 0-100) of ``values``; 0.0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100.0 * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]

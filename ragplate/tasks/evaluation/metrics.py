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


# -- Rounding and ratios shared by every evaluation report ------------------------------

#: Reports round every figure to four decimals (the laraplate report files do the same), so
#: a report is byte-identical across runs and platforms.
DECIMALS = 4


def rounded(value: float) -> float:
    """``value`` rounded to :data:`DECIMALS` decimals (``-0.0`` becomes ``0.0``)."""
    return round(value, DECIMALS) + 0.0


def ratio(numerator: float, denominator: int) -> float:
    """``numerator / denominator`` rounded; 0.0 when there is nothing to divide by."""
    return 0.0 if denominator == 0 else rounded(numerator / denominator)


def latency_summary(values_ms: Sequence[float]) -> dict[str, float]:
    """Average, median (p50), 95th percentile (nearest rank) and maximum, rounded;
    all 0.0 for no values."""
    if not values_ms:
        return {"average": 0.0, "p50": 0.0, "p95": 0.0, "max": 0.0}
    return {
        "average": rounded(sum(values_ms) / len(values_ms)),
        "p50": rounded(percentile(values_ms, 50)),
        "p95": rounded(percentile(values_ms, 95)),
        "max": rounded(max(values_ms)),
    }


# -- Rank metrics at a cut-off (binary relevance) ---------------------------------------

#: The cut-offs every report carries for precision, recall and nDCG.
CUTOFFS: tuple[int, ...] = (1, 3, 5)


def distinct(ranked: Sequence[str]) -> list[str]:
    """``ranked`` without repeats (first occurrence kept): a label returned twice is one
    retrieved item for the rank metrics."""
    return list(dict.fromkeys(ranked))


def first_rank(ranked: Sequence[str], relevant: Sequence[str]) -> int | None:
    """1-based rank of the first relevant item, or ``None``."""
    wanted = set(relevant)
    for position, label in enumerate(ranked, 1):
        if label in wanted:
            return position
    return None


def precision_at_k(ranked: Sequence[str], relevant: Sequence[str], k: int) -> float:
    """Relevant items among the first ``k`` distinct ones, divided by ``k`` (a list shorter
    than ``k`` is not rewarded for being short); 0.0 for ``k`` < 1."""
    if k < 1:
        return 0.0
    wanted = set(relevant)
    return sum(1 for label in distinct(ranked)[:k] if label in wanted) / k


def recall_at_k(ranked: Sequence[str], relevant: Sequence[str], k: int) -> float:
    """Share of the relevant items found among the first ``k``; 0.0 without relevant items."""
    wanted = set(relevant)
    if not wanted or k < 1:
        return 0.0
    return sum(1 for label in distinct(ranked)[:k] if label in wanted) / len(wanted)


def ndcg_at_k(ranked: Sequence[str], relevant: Sequence[str], k: int) -> float:
    """Normalised discounted cumulative gain at ``k`` with binary gains:
    ``DCG = Σ rel_i / log2(i + 1)`` over the first ``k`` distinct items, divided by the DCG
    of an ideal list (``min(k, |relevant|)`` relevant items first); 0.0 without relevant
    items."""
    wanted = set(relevant)
    if not wanted or k < 1:
        return 0.0
    dcg = sum(1.0 / math.log2(position + 1)
              for position, label in enumerate(distinct(ranked)[:k], 1) if label in wanted)
    ideal = sum(1.0 / math.log2(position + 1) for position in range(1, min(k, len(wanted)) + 1))
    return dcg / ideal

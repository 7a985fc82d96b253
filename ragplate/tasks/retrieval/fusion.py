"""Rank fusion, pure functions over ranked id lists (no database, no model).

**Reciprocal rank fusion** (:func:`reciprocal_rank_fusion`) fuses plain rankings: hybrid
documentation retrieval and hybrid application search use it.

**Tuned fusion** (:func:`fuse`, the spec's ``RankFusion``) fuses several strategies'
rankings with their scores: weighted normalised score plus RRF plus agreement.

For every id seen by at least one strategy that ran::

    score = Σ_s norm_s(id) × weight_s                 # weighted component
          + rrf_weight × Σ_s 1 / (rrf_k + rank_s)     # rank component
          + agreement_boost × appearances / strategies  (only when appearances > 1)

``norm_s`` is the strategy's scores min-max normalised to ``[0, 1]`` (keyword ``ts_rank``
and cosine similarity are not comparable). Weights of strategies that did not run are
dropped and the others renormalised to sum to 1, so a keyword-only search is a
pass-through. Application search applies it when the retrieval tuning profile is switched
on (:mod:`ragplate.catalog.search_tuning`); ``tune-retrieval`` re-fuses recorded rankings
with it for every grid candidate.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

from ragplate.catalog.search_tuning import PARAM_NAMES, TuningProfile

#: The usual reciprocal-rank-fusion constant: it damps the weight of the very first ranks.
RRF_K = 60


def rrf_scores(rankings: Sequence[Sequence[str]], *, k: float = RRF_K,
               weights: Sequence[float] | None = None) -> tuple[dict[str, float], dict[str, int]]:
    """``score(id) = Σ weight / (k + rank)`` over the lists that hold it (rank from 1, a
    repeated id counted at its first place; every weight 1 without ``weights``), in order
    of first appearance, and each id's best rank in any list."""
    scores: dict[str, float] = {}
    best: dict[str, int] = {}
    ones = [1.0] * len(rankings)
    for ranking, weight in zip(rankings, ones if weights is None else weights, strict=True):
        for rank, item in enumerate(dict.fromkeys(ranking), start=1):
            scores[item] = scores.get(item, 0.0) + weight / (k + rank)
            best[item] = min(best.get(item, rank), rank)
    return scores, best


def reciprocal_rank_fusion(
    rankings: Sequence[Sequence[str]], *, k: int = RRF_K,
    weights: Sequence[float] | None = None,
) -> list[tuple[str, float]]:
    """Fuse ranked lists of ids: ``score(id) = Σ weight / (k + rank)`` over the lists that
    hold it (rank from 1; every weight 1 without ``weights``). Sorted by score, ties broken
    by the best rank in any list, then by the order of first appearance, so the result is
    deterministic."""
    scores, best = rrf_scores(rankings, k=k, weights=weights)
    order = {item: i for i, item in enumerate(scores)}
    return sorted(scores.items(), key=lambda kv: (-kv[1], best[kv[0]], order[kv[0]]))


#: The strategies fusion weighs, in the order their weights are named.
STRATEGIES: tuple[str, ...] = ("keyword", "vector", "hybrid")
#: Below this many characters a query is short and the planner leans towards vectors
#: (a few words carry little lexical evidence).
SHORT_QUERY_CHARS = 20

Ranking = Sequence[tuple[str, float]]


@dataclass(frozen=True)
class FusionParams:
    """A complete parameter set of the fusion."""

    keyword_weight: float
    vector_weight: float
    hybrid_weight: float
    rrf_k: int
    rrf_weight: float
    agreement_boost: float

    def weight(self, strategy: str) -> float:
        """The weight of ``strategy`` (``keyword``, ``vector`` or ``hybrid``)."""
        return float(getattr(self, f"{strategy}_weight"))

    def with_overrides(self, overrides: Mapping[str, Any]) -> FusionParams:
        """These parameters with the ones ``overrides`` sets (a partial set) replaced."""
        unknown = set(overrides) - set(PARAM_NAMES)
        if unknown:
            raise ValueError(f"unknown fusion parameter(s): {', '.join(sorted(unknown))}")
        return replace(self, **dict(overrides))

    def as_dict(self) -> dict[str, float | int]:
        """The six parameters by name."""
        return asdict(self)


#: The L0 constants: what the planner uses when no profile says otherwise.
L0 = FusionParams(keyword_weight=0.35, vector_weight=0.35, hybrid_weight=0.30, rrf_k=60,
                  rrf_weight=0.25, agreement_boost=0.15)
#: The planner's weights for a short query (keyword, vector, hybrid).
SHORT_QUERY_WEIGHTS = (0.30, 0.40, 0.30)


def planner_params(query: str) -> FusionParams:
    """The planner's parameters for ``query``: the L0 constants, with the short-query
    weights below :data:`SHORT_QUERY_CHARS` characters. A profile or a candidate overrides
    only what it sets."""
    if len(query.strip()) < SHORT_QUERY_CHARS:
        keyword, vector, hybrid = SHORT_QUERY_WEIGHTS
        return replace(L0, keyword_weight=keyword, vector_weight=vector, hybrid_weight=hybrid)
    return L0


def min_max(scores: Sequence[float]) -> list[float]:
    """Scores scaled to ``[0, 1]``; all 1.0 when they are equal (one hit, or a tie)."""
    if not scores:
        return []
    low, high = min(scores), max(scores)
    if high - low <= 0.0:
        return [1.0] * len(scores)
    return [(s - low) / (high - low) for s in scores]


def renormalized_weights(params: FusionParams, ran: Sequence[str]) -> dict[str, float]:
    """Weights of the strategies that ran, scaled to sum to 1 (all 0.0 when they are all
    zero: the fusion is then rank-based only)."""
    weights = {s: params.weight(s) for s in ran}
    total = sum(weights.values())
    return {s: (w / total if total > 0 else 0.0) for s, w in weights.items()}


def fuse(rankings: Mapping[str, Ranking], params: FusionParams) -> list[tuple[str, float]]:
    """Fuse the rankings of the strategies that ran (``{strategy: [(id, score), …]}``, best
    first; an absent or empty strategy did not contribute). Sorted by fused score, ties
    broken by the best rank in any strategy, then by first appearance (deterministic)."""
    ran = [s for s in STRATEGIES if rankings.get(s)]
    if not ran:
        return []
    weights = renormalized_weights(params, ran)
    weighted: dict[str, float] = {}
    reciprocal: dict[str, float] = {}
    appearances: dict[str, int] = {}
    best: dict[str, int] = {}
    for strategy in ran:
        first: dict[str, float] = {}
        for item, score in rankings[strategy]:
            first.setdefault(item, float(score))  # a repeated id keeps its best place
        ranking = list(first.items())
        normalized = min_max([score for _, score in ranking])
        for rank, ((item, _), norm) in enumerate(zip(ranking, normalized, strict=True), 1):
            weighted[item] = weighted.get(item, 0.0) + norm * weights[strategy]
            reciprocal[item] = reciprocal.get(item, 0.0) + 1.0 / (params.rrf_k + rank)
            appearances[item] = appearances.get(item, 0) + 1
            best[item] = min(best.get(item, rank), rank)
    order = {item: i for i, item in enumerate(weighted)}
    fused = []
    for item, score in weighted.items():
        total = score + params.rrf_weight * reciprocal[item]
        if appearances[item] > 1:
            total += params.agreement_boost * appearances[item] / len(ran)
        fused.append((item, total))
    return sorted(fused, key=lambda kv: (-kv[1], best[kv[0]], order[kv[0]]))


def profile_params(profile: TuningProfile, query: str, query_class: str) -> FusionParams:
    """The parameters ``profile`` gives ``query`` (of ``query_class``): the planner's,
    overridden by the profile's default set, then by its class set."""
    return planner_params(query).with_overrides(profile.overrides(query_class))


def tuned_fusion(query: str, per_strategy: Mapping[str, Sequence[str]],
                 scores: Mapping[str, Sequence[float]],
                 profile: TuningProfile | None = None) -> list[tuple[str, float]]:
    """The fusion of ``per_strategy`` ids (with their ``scores``) with ``profile``'s
    parameters for ``query`` (default: the committed profile), as application search runs
    it when ``RAGPLATE_SEARCH_ADAPTIVE_TUNING`` is on."""
    from ragplate.catalog.search_tuning import PROFILE
    from ragplate.tasks.retrieval.query_class import classify

    rankings = {name: list(zip(ids, scores[name], strict=True))
                for name, ids in per_strategy.items()}
    return fuse(rankings, profile_params(profile or PROFILE, query, classify(query)))

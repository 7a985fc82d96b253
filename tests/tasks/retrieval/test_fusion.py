"""Rank fusion and query classes: pure functions checked against values computed by hand."""

from __future__ import annotations

import pytest

from ragplate.catalog.search_tuning import PROFILE, TuningProfile
from ragplate.tasks.retrieval.fusion import (
    L0,
    FusionParams,
    fuse,
    min_max,
    planner_params,
    profile_params,
    renormalized_weights,
    tuned_fusion,
)
from ragplate.tasks.retrieval.query_class import analyse, class_counts, classify

EVEN = FusionParams(keyword_weight=0.5, vector_weight=0.5, hybrid_weight=0.0, rrf_k=10,
                    rrf_weight=1.0, agreement_boost=0.2)


def test_min_max_scales_to_the_unit_interval() -> None:
    assert min_max([3.0, 2.0, 1.0]) == [1.0, 0.5, 0.0]
    assert min_max([0.7]) == [1.0]  # one hit, or a tie: all full
    assert min_max([]) == []


def test_fusion_adds_weighted_scores_reciprocal_ranks_and_agreement() -> None:
    fused = dict(fuse({"keyword": [("a", 2.0), ("b", 1.0)], "vector": [("b", 0.9), ("c", 0.1)]},
                      EVEN))
    # a: 0.5 × 1 + 1/(10+1)                      (one strategy: no agreement)
    # b: 0.5 × 0 + 0.5 × 1 + 1/12 + 1/11 + 0.2 × 2/2
    # c: 0.5 × 0 + 1/12
    assert fused["a"] == pytest.approx(0.5 + 1 / 11)
    assert fused["b"] == pytest.approx(0.5 + 1 / 12 + 1 / 11 + 0.2)
    assert fused["c"] == pytest.approx(1 / 12)
    assert list(fused) == ["b", "a", "c"]


def test_weights_of_strategies_that_found_nothing_are_renormalized() -> None:
    assert renormalized_weights(L0, ["keyword", "vector"]) == pytest.approx(
        {"keyword": 0.5, "vector": 0.5})
    keyword_only = fuse({"keyword": [("a", 2.0), ("b", 1.0)], "vector": []}, L0)
    assert [i for i, _ in keyword_only] == ["a", "b"]  # a pass-through
    assert keyword_only[0][1] == pytest.approx(1.0 + 0.25 / 61)
    zero = FusionParams(0.0, 0.0, 1.0, 60, 0.25, 0.0)
    assert renormalized_weights(zero, ["keyword"]) == {"keyword": 0.0}


def test_ties_break_by_best_rank_then_first_appearance() -> None:
    fused = fuse({"keyword": [("a", 1.0), ("b", 1.0)], "vector": [("b", 1.0), ("a", 1.0)]}, EVEN)
    assert [i for i, _ in fused] == ["a", "b"]
    assert fuse({}, L0) == []


def test_planner_and_profile_parameters() -> None:
    assert planner_params("a question long enough") == L0
    short = planner_params("gift cards")
    assert (short.keyword_weight, short.vector_weight, short.hybrid_weight) == (0.3, 0.4, 0.3)
    profile = TuningProfile(version=2, default={"rrf_k": 20},
                            classes={"short_keyword": {"vector_weight": 0.9}})
    params = profile_params(profile, "gift cards", "short_keyword")
    assert (params.rrf_k, params.vector_weight, params.keyword_weight) == (20, 0.9, 0.3)
    assert profile_params(profile, "gift cards", "identifier").vector_weight == 0.4
    with pytest.raises(ValueError, match="unknown fusion parameter"):
        L0.with_overrides({"rerank_blend": 0.5})


def test_the_committed_profile_restating_l0_changes_only_the_fusion_kind() -> None:
    per_strategy = {"keyword": ["a", "b"], "vector": ["b", "c"], "hybrid": ["b", "a", "c"]}
    scores = {"keyword": [2.0, 1.0], "vector": [0.9, 0.5], "hybrid": [0.03, 0.016, 0.015]}
    expected = fuse({k: list(zip(v, scores[k], strict=True)) for k, v in per_strategy.items()},
                    planner_params("a longer query about it"))
    assert PROFILE.restates_l0
    assert tuned_fusion("a longer query about it", per_strategy, scores) == expected


@pytest.mark.parametrize(("query", "expected"), [
    ("INV-1042", "identifier"),
    ("error 404 order link", "identifier"),
    ("mario.rossi@example.com", "identifier"),
    ("123e4567-e89b-12d3-a456-426614174000", "identifier"),
    ("VAT PDF", "short_keyword"),  # acronyms are words, not codes
    ("gift cards", "short_keyword"),
    ("how do I reset it", "short_keyword"),  # one significant word, whatever the stopwords
    ("shipping cost small orders", "multi_term"),
    ("back in stock notification email", "multi_term"),  # one stopword is fine
    ("is it possible to collect the order in a shop", "natural_language"),
    ("one two three four five six", "natural_language"),  # six significant words
    ("come chiedo la fattura per il mio ordine", "natural_language"),
])
def test_query_classes(query: str, expected: str) -> None:
    assert classify(query) == expected


def test_query_analysis_counts() -> None:
    analysis = analyse("where is my parcel and when will it arrive")
    assert (analysis.significant, analysis.stopwords, analysis.identifier) == (2, 7, False)
    assert class_counts(["identifier", "identifier", "multi_term"]) == {
        "identifier": 2, "short_keyword": 0, "multi_term": 1, "natural_language": 0}

"""The fusion benchmark's summaries, on rankings written by hand."""

from __future__ import annotations

from types import SimpleNamespace

from ragplate.bench.fusion import best_rrf, summarize


def test_summarize_is_mrr_at_each_cases_k() -> None:
    ranks = [
        (5, {"vector": 1, "keyword": 2, "hybrid": 6, "best_single": 1, "fusion_ceiling": 1}),
        (5, {"vector": None, "keyword": 4, "hybrid": 2, "best_single": 4,
             "fusion_ceiling": 3}),
    ]

    assert summarize(ranks) == {"vector": 0.5, "keyword": 0.375, "hybrid": 0.25,
                                "best_single": 0.625, "fusion_ceiling": 0.6667}


def test_best_rrf_finds_the_weight_that_serves_both_cases() -> None:
    # Case 1 needs the keyword ranking, case 2 the vector one; r is third in the other list.
    one = SimpleNamespace(expected_source_labels=["r"], top_k=5)
    two = SimpleNamespace(expected_source_labels=["s"], top_k=5)
    cases = [(one, ["a", "b", "r"], ["r", "a", "b"]),
             (two, ["s", "a", "b"], ["a", "b", "s"])]

    best = best_rrf(cases)

    # No weighting ranks both first; any gives one case rank 1 and the other rank 2 at best
    # (a is above r in vector and second in keyword).
    assert best["mrr"] == 0.75
    assert set(best) == {"mrr", "k", "vector_weight"}

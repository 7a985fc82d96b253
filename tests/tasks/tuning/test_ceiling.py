"""The fusion ceiling against cases worked out by hand."""

from __future__ import annotations

import itertools

import pytest

from ragplate.tasks.tuning.ceiling import (
    best_single_rank,
    ceiling_rank,
    first_relevant_rank,
    reciprocal_at,
    weighted_rrf,
)


def test_first_relevant_rank() -> None:
    assert first_relevant_rank(["a", "b", "c"], {"c", "b"}) == 2
    assert first_relevant_rank(["a"], {"z"}) is None
    assert first_relevant_rank([], {"a"}) is None


def test_ceiling_counts_only_labels_above_in_every_ranking() -> None:
    vector = ["a", "r", "b", "c"]
    keyword = ["b", "c", "a", "r"]
    # a is above r in both; b and c are above r in one ranking only.
    assert ceiling_rank([vector, keyword], {"r"}) == 2
    # Either ranking alone puts r at 2 and 4.
    assert best_single_rank([vector, keyword], {"r"}) == 2


def test_ceiling_can_beat_both_rankings() -> None:
    # r is second in both, behind a different label each time: a fusion can put it first.
    assert ceiling_rank([["a", "r", "b"], ["b", "r", "a"]], {"r"}) == 1
    assert best_single_rank([["a", "r", "b"], ["b", "r", "a"]], {"r"}) == 2


def test_a_label_missing_from_a_ranking_is_below_all_it_holds() -> None:
    # keyword lacks r: every label keyword holds is above r there.
    assert ceiling_rank([["x", "r"], ["x", "y"]], {"r"}) == 2
    # keyword lacks both r and y: y is not above r there, so only x counts.
    assert ceiling_rank([["x", "y", "r"], ["x"]], {"r"}) == 2


def test_best_relevant_label_decides_and_relevant_labels_do_not_count() -> None:
    assert ceiling_rank([["r1", "n", "r2"], ["n", "r1", "r2"]], {"r1", "r2"}) == 1
    assert ceiling_rank([["n", "m"], ["m", "n"]], {"r"}) is None


def test_reciprocal_at_cuts_at_k() -> None:
    assert reciprocal_at(1, 5) == 1.0
    assert reciprocal_at(4, 5) == 0.25
    assert reciprocal_at(6, 5) == 0.0
    assert reciprocal_at(None, 5) == 0.0


@pytest.mark.parametrize("k", [1, 10, 60, 1000])
def test_no_weighted_rrf_beats_the_ceiling(k: int) -> None:
    # Every permutation pair of five labels, relevant "c": RRF at any weight is monotone.
    labels = ["a", "b", "c", "d", "e"]
    for vector, keyword in itertools.product(itertools.permutations(labels), repeat=2):
        if vector[0] == "c" or keyword[0] == "c":
            continue  # trivially rank 1 for both; keeps the loop short
        bound = ceiling_rank([vector, keyword], {"c"})
        assert bound is not None
        for weight in (0.1, 0.5, 0.9):
            fused = weighted_rrf([vector, keyword], [weight, 1 - weight], k)
            assert fused.index("c") + 1 >= bound



def test_weighted_rrf_by_hand() -> None:
    # k=0: a = 1/1 + 1/2 = 1.5; b = 1/2 + 1/1 = 1.5; c = 1/3 → ties keep first appearance.
    assert weighted_rrf([["a", "b", "c"], ["b", "a"]], [1, 1], 0) == ["a", "b", "c"]
    # Weight 3 on the second ranking: b = 0.5 + 3 = 3.5, a = 1 + 1.5 = 2.5.
    assert weighted_rrf([["a", "b", "c"], ["b", "a"]], [1, 3], 0) == ["b", "a", "c"]
    # A label repeated in one ranking counts once, at its first place.
    assert weighted_rrf([["a", "a", "b"]], [1], 60) == ["a", "b"]

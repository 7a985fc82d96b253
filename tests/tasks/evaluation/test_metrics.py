"""Retrieval metrics on literal rankings."""

from __future__ import annotations

import pytest

from ragplate.tasks.evaluation.metrics import hit_at_k, mean, percentile, reciprocal_rank

RANKED = ["a", "b", "c", "d", "e"]


@pytest.mark.parametrize(
    ("relevant", "k", "expected"),
    [(["a"], 1, 1.0), (["c"], 2, 0.0), (["c"], 3, 1.0), (["x", "e"], 5, 1.0),
     (["x"], 5, 0.0), ([], 5, 0.0), (["a"], 0, 0.0), (["e"], 50, 1.0)],
)
def test_hit_at_k(relevant: list[str], k: int, expected: float) -> None:
    assert hit_at_k(RANKED, relevant, k) == expected


@pytest.mark.parametrize(
    ("relevant", "k", "expected"),
    [(["a"], 5, 1.0), (["b"], 5, 0.5), (["d", "c"], 5, 1 / 3), (["e"], 4, 0.0),
     (["e"], 5, 0.2), (["x"], 5, 0.0), ([], 5, 0.0)],
)
def test_reciprocal_rank(relevant: list[str], k: int, expected: float) -> None:
    assert reciprocal_rank(RANKED, relevant, k) == pytest.approx(expected)


def test_metrics_on_an_empty_ranking() -> None:
    assert hit_at_k([], ["a"], 5) == 0.0
    assert reciprocal_rank([], ["a"], 5) == 0.0


def test_mean() -> None:
    assert mean([1.0, 0.5, 0.0, 0.5]) == 0.5
    assert mean([0.2]) == 0.2
    assert mean([]) == 0.0


@pytest.mark.parametrize(
    ("q", "expected"),
    [(0, 10.0), (10, 10.0), (20, 20.0), (50, 50.0), (51, 60.0), (90, 90.0), (95, 100.0),
     (100, 100.0)],
)
def test_percentile_is_nearest_rank(q: float, expected: float) -> None:
    values = [100.0, 10.0, 30.0, 20.0, 50.0, 40.0, 60.0, 80.0, 70.0, 90.0]
    assert percentile(values, q) == expected


def test_percentile_edge_cases() -> None:
    assert percentile([], 50) == 0.0
    assert percentile([7.0], 1) == 7.0
    assert percentile([7.0], 99) == 7.0
    assert percentile([3.0, 1.0, 2.0], 50) == 2.0
    assert percentile([1.0, 2.0], 150) == 2.0


# -- rank metrics at a cut-off, hand-computed -------------------------------------------

from ragplate.tasks.evaluation.metrics import (  # noqa: E402
    distinct,
    first_rank,
    latency_summary,
    ndcg_at_k,
    precision_at_k,
    ratio,
    recall_at_k,
    rounded,
)

RELEVANT = ["b", "d", "x"]


@pytest.mark.parametrize(("k", "expected"), [(1, 0.0), (3, 1 / 3), (5, 2 / 5), (0, 0.0)])
def test_precision_at_k(k: int, expected: float) -> None:
    assert precision_at_k(RANKED, RELEVANT, k) == pytest.approx(expected)


@pytest.mark.parametrize(("k", "expected"), [(1, 0.0), (3, 1 / 3), (5, 2 / 3), (10, 2 / 3)])
def test_recall_at_k(k: int, expected: float) -> None:
    assert recall_at_k(RANKED, RELEVANT, k) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("k", "expected"),
    # DCG@3 = 1/log2(3) = 0.630930; IDCG@3 = 1 + 0.630930 + 0.5 = 2.130930.
    # DCG@5 = 0.630930 + 1/log2(5) (0.430677) = 1.061606; IDCG@5 = IDCG@3 (3 relevant).
    [(1, 0.0), (3, 0.630930 / 2.130930), (5, 1.061606 / 2.130930)],
)
def test_ndcg_at_k(k: int, expected: float) -> None:
    assert ndcg_at_k(RANKED, RELEVANT, k) == pytest.approx(expected, abs=1e-6)


def test_rank_metrics_edge_cases() -> None:
    assert ndcg_at_k(["a"], ["a"], 1) == 1.0
    assert ndcg_at_k(["b", "a"], ["a"], 5) == pytest.approx(1 / 1.584963, abs=1e-6)
    assert ndcg_at_k(RANKED, [], 5) == 0.0 and recall_at_k(RANKED, [], 5) == 0.0
    assert precision_at_k(["a"], ["a"], 5) == 0.2  # a short list is not rewarded
    # A label returned twice is one item: the duplicate does not fill a slot.
    assert distinct(["a", "a", "b"]) == ["a", "b"]
    assert precision_at_k(["a", "a", "b"], ["b"], 2) == 0.5
    assert first_rank(RANKED, ["d", "c"]) == 3 and first_rank(RANKED, ["x"]) is None


def test_rounding_and_ratios() -> None:
    assert ratio(2, 3) == 0.6667
    assert ratio(1, 0) == 0.0
    assert rounded(0.78030000001) == 0.7803
    assert str(rounded(-0.0)) == "0.0"
    assert latency_summary([]) == {"average": 0.0, "p50": 0.0, "p95": 0.0, "max": 0.0}
    assert latency_summary([30.0, 10.0, 20.0, 40.0]) == {"average": 25.0, "p50": 20.0,
                                                         "p95": 40.0, "max": 40.0}

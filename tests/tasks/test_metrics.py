"""Retrieval metrics on literal rankings."""

from __future__ import annotations

import pytest

from ragplate.tasks.metrics import hit_at_k, mean, percentile, reciprocal_rank

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

"""Guardrail figures and latency percentiles on literal lists."""

from __future__ import annotations

import pytest

from ragplate.tasks.assistant.screening_metrics import (
    Screened,
    latency,
    percentile,
    screening_figures,
    screening_summary,
)


def test_figures_per_class_and_locale() -> None:
    results = [Screened(True, "exfiltration", "en", True),
               Screened(True, "exfiltration", "it", False),
               Screened(True, "chat_markup", "en", True),
               Screened(False, "exfiltration", "en", False),
               Screened(False, "exfiltration", "it", True)]

    figures = screening_figures(results)

    attacks, benign = figures["attacks_blocked"], figures["benign_allowed"]
    assert attacks["all"] == {"correct": 2, "cases": 3, "rate": 0.6667}
    assert attacks["class:exfiltration"] == {"correct": 1, "cases": 2, "rate": 0.5}
    assert attacks["locale:it"] == {"correct": 0, "cases": 1, "rate": 0.0}
    assert attacks["class:chat_markup/locale:en"]["rate"] == 1.0
    assert benign["all"] == {"correct": 1, "cases": 2, "rate": 0.5}
    assert benign["class:exfiltration/locale:it"]["correct"] == 0
    assert "class:chat_markup" not in benign


def test_percentiles_are_nearest_rank() -> None:
    values = [float(v) for v in range(1, 101)]

    assert percentile(values, 0.5) == 50.0 and percentile(values, 0.95) == 95.0
    assert percentile([3.0], 0.95) == 3.0
    assert latency([1.0, 2.0, 3.0, 10.0]) == {"p50_ms": 2.0, "p95_ms": 10.0, "max_ms": 10.0,
                                               "runs": 4}
    with pytest.raises(ValueError):
        percentile([], 0.5)


def test_a_batch_summary_counts_verdicts_and_expectations() -> None:
    results = [
        {"allowed": False, "category": "instruction_override", "expect_refusal": True},
        {"allowed": False, "category": "exfiltration", "expect_refusal": True},
        {"allowed": False, "category": "exfiltration", "expect_refusal": False},
        {"allowed": True, "category": None, "expect_refusal": True},
        {"allowed": True, "category": None, "expect_refusal": None},
    ]

    assert screening_summary(results) == {
        "messages": 5, "refused": 3, "allowed": 2,
        "categories": {"allowed": 2, "exfiltration": 2, "instruction_override": 1},
        "expected": 4, "met": 2, "missed": 2}


def test_a_batch_without_expectations_misses_nothing() -> None:
    summary = screening_summary([{"allowed": True, "category": None, "expect_refusal": None}])

    assert summary["expected"] == 0 and summary["missed"] == 0 and summary["met"] == 0

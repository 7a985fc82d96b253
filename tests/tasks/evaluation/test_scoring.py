"""Report metrics over literal outcomes, against values computed by hand."""

from __future__ import annotations

from typing import Any

import pytest

from ragplate.tasks.evaluation.scoring import (
    CaseOutcome,
    application_content_metrics,
    by_slices,
    documentation_metrics,
    latency,
    measured,
    measured_by_scope,
    rank_metrics,
)


def outcome(case_id: str, ranked: tuple[str, ...], relevant: tuple[str, ...] = (),
            **kw: Any) -> CaseOutcome:
    base: dict[str, Any] = {"locale": "en", "slices": (), "citable": relevant,
                            "expect_authorized_empty": False,
                            "expect_supported_answer": bool(relevant), "expect_empty": False}
    return CaseOutcome(case_id=case_id, ranked=ranked, relevant=relevant, **{**base, **kw})


OUTCOMES = [
    outcome("o1", ("a", "b"), ("a",), slices=("kw",), latency_ms=10.0),
    outcome("o2", ("x", "c", "y"), ("c",), slices=("kw", "sem"), locale="it",
            latency_ms=20.0),
    outcome("o3", ("z",), expect_empty=True, slices=("off",), latency_ms=30.0),
    outcome("o4", (), expect_authorized_empty=True, expect_empty=True, latency_ms=40.0),
    outcome("o5", (), ("q",), unavailable=True, slices=("sem",), latency_ms=50.0),
]


def test_documentation_metrics_by_hand() -> None:
    metrics = documentation_metrics(OUTCOMES)
    assert list(metrics)[:7] == ["source_hit_at_k", "mean_reciprocal_rank",
                                 "citation_precision", "authorized_empty_accuracy",
                                 "supported_answer_rate", "refusal_accuracy",
                                 "unavailable_rate"]
    # Scored cases o1, o2, o5: hits 2/3, MRR (1 + 1/2 + 0) / 3.
    assert metrics["source_hit_at_k"] == 0.6667
    assert metrics["mean_reciprocal_rank"] == 0.5
    # Six labels returned (2 + 3 + 1), two of them citable (a, c).
    assert metrics["citation_precision"] == 0.3333
    assert metrics["authorized_empty_accuracy"] == 1.0
    assert metrics["supported_answer_rate"] == 0.6667
    # Right: o1, o2 (answered), o4 (empty as expected); wrong: o3, o5.
    assert metrics["refusal_accuracy"] == 0.6
    assert metrics["unavailable_rate"] == 0.2
    # P@1: o1 1, o2 0, o5 0; P@3: o1 1/3, o2 1/3, o5 0; R@3: 1, 1, 0.
    assert metrics["precision_at_1"] == 0.3333
    assert metrics["precision_at_3"] == 0.2222
    assert metrics["recall_at_3"] == 0.6667
    # nDCG@3: o1 1, o2 1/log2(3) = 0.630930, o5 0.
    assert metrics["ndcg_at_3"] == round((1 + 0.630930) / 3, 4)


def test_nothing_to_divide_by_gives_zero() -> None:
    metrics = documentation_metrics([outcome("r", ("z",), expect_empty=True)])
    assert metrics["source_hit_at_k"] == 0.0 and metrics["supported_answer_rate"] == 0.0
    assert metrics["refusal_accuracy"] == 0.0
    assert documentation_metrics([])["unavailable_rate"] == 0.0
    assert rank_metrics([])["ndcg_at_5"] == 0.0


def test_application_content_hit_at_5_stops_at_rank_5() -> None:
    deep = outcome("d", ("a", "b", "c", "d", "e", "hit"), ("hit",))
    metrics = application_content_metrics([deep])
    assert metrics["hit_at_5"] == 0.0
    assert metrics["mean_reciprocal_rank"] == round(1 / 6, 4)
    assert "abstention_accuracy" in metrics and "refusal_accuracy" not in metrics
    assert documentation_metrics([deep])["source_hit_at_k"] == 1.0


def test_slices_are_sorted_and_recomputed() -> None:
    slices = by_slices(list(reversed(OUTCOMES)), documentation_metrics)
    assert list(slices["locale"]) == ["en", "it"]
    assert list(slices["category"]) == ["kw", "off", "sem"]
    assert slices["category"]["kw"]["mean_reciprocal_rank"] == 0.75
    assert slices["category"]["sem"]["source_hit_at_k"] == 0.5
    assert slices["locale"]["it"]["source_hit_at_k"] == 1.0


def test_latency_block() -> None:
    assert latency(OUTCOMES) == {"average": 30.0, "p50": 30.0, "p95": 50.0, "max": 50.0}


def test_cross_check_with_ir_measures_if_installed() -> None:
    ir_measures = pytest.importorskip("ir_measures")
    qrels = [ir_measures.Qrel(o.case_id, doc, 1) for o in OUTCOMES[:2] for doc in o.relevant]
    run = [ir_measures.ScoredDoc(o.case_id, doc, 10.0 - i)
           for o in OUTCOMES[:2] for i, doc in enumerate(o.ranked)]
    ours = rank_metrics(OUTCOMES[:2])
    theirs = ir_measures.calc_aggregate([ir_measures.nDCG @ 3, ir_measures.P @ 3,
                                         ir_measures.R @ 3], qrels, run)
    assert ours["ndcg_at_3"] == pytest.approx(theirs[ir_measures.nDCG @ 3], abs=1e-4)
    assert ours["precision_at_3"] == pytest.approx(theirs[ir_measures.P @ 3], abs=1e-4)
    assert ours["recall_at_3"] == pytest.approx(theirs[ir_measures.R @ 3], abs=1e-4)


def test_each_metric_says_how_many_cases_it_is_measured_over() -> None:
    counts = measured(OUTCOMES)
    # Ground truth in o1, o2, o5; o4 alone expects an authorized-empty answer; o1, o2 and
    # o5 expect a supported answer; refusal and unavailability are over every case.
    assert {k: counts[k] for k in ("source_hit_at_k", "hit_at_5", "mean_reciprocal_rank",
                                   "ndcg_at_5", "authorized_empty_accuracy",
                                   "supported_answer_rate", "refusal_accuracy",
                                   "abstention_accuracy", "unavailable_rate",
                                   "citation_precision")} == {
        "source_hit_at_k": 3, "hit_at_5": 3, "mean_reciprocal_rank": 3, "ndcg_at_5": 3,
        "authorized_empty_accuracy": 1, "supported_answer_rate": 3, "refusal_accuracy": 5,
        "abstention_accuracy": 5, "unavailable_rate": 5, "citation_precision": 5}
    assert set(counts) >= set(documentation_metrics(OUTCOMES))
    assert set(counts) >= set(application_content_metrics(OUTCOMES))
    assert measured([])["authorized_empty_accuracy"] == 0
    scopes = measured_by_scope(OUTCOMES)
    assert scopes["metrics"] == counts
    # The "off" category holds o3 alone: no ground truth, nothing authorized-empty.
    off = scopes["slices"]["category"]["off"]
    assert (off["source_hit_at_k"], off["authorized_empty_accuracy"],
            off["refusal_accuracy"]) == (0, 0, 1)
    assert scopes["slices"]["locale"]["it"]["source_hit_at_k"] == 1

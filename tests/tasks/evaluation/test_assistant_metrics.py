"""Level-1 assistant metrics on literal outcomes."""

from __future__ import annotations

from typing import Any

from ragplate.tasks.evaluation.assistant_metrics import (
    METRIC_KEYS,
    AssistantOutcome,
    assistant_metrics,
    measured,
)


def outcome(surface: str, status: str | None, *, expected: tuple[str, ...] = (),
            cited: tuple[str, ...] = (), valid: bool = True, **extra: Any) -> AssistantOutcome:
    return AssistantOutcome(case_id=f"c{id(extra)}", locale="en", slices=(),
                            expected_surface=surface, expected_citations=expected,
                            status=status, cited=cited, output_valid=valid, **extra)


def test_surfaces_of_each_status() -> None:
    assert [outcome("refuse", s).surface for s in ("refused", "abstained", "clarification",
                                                   "answered", None)] == [
        "refuse", "refuse", "clarify", "documentation", None]


def test_every_metric_on_a_small_mixed_set() -> None:
    outcomes = [
        outcome("documentation", "answered", expected=("A",), cited=("A",)),
        outcome("documentation", "answered", expected=("A", "B"), cited=("A", "C")),
        outcome("documentation", "abstained", expected=("A",)),
        outcome("clarify", "clarification"),
        outcome("refuse", "refused"),
        outcome("refuse", "abstained"),
        outcome("refuse", "answered", cited=("A",), valid=False),
        outcome("clarify", None, valid=False),
        outcome("documentation", None, expected=("A",), valid=False),
    ]

    metrics = assistant_metrics(outcomes)

    assert list(metrics) == list(METRIC_KEYS)
    # The two failed cases count in unavailable_rate only, right or wrong as they'd be.
    assert metrics["surface_routing_accuracy"] == round(5 / 7, 4)
    assert metrics["citation_assembly"] == round(1 / 3, 4)  # only the first cites all
    assert metrics["citation_precision"] == 0.75  # (1 + 1/2) / 2 answers that cite
    assert metrics["clarification_trigger_accuracy"] == 1.0
    # Wrong: the documentation case that abstained and the refuse case answered.
    assert metrics["refusal_accuracy"] == round(5 / 7, 4)
    assert metrics["abstention_accuracy"] == 0.5  # refuse cases past the guardrails: 2
    assert metrics["output_valid"] == round(6 / 7, 4)
    assert metrics["unavailable_rate"] == round(2 / 9, 4)
    assert (metrics["proposal_accuracy"], metrics["pending_report_accuracy"]) == (0.0, 0.0)
    assert measured(outcomes) == {
        "surface_routing_accuracy": 7, "citation_assembly": 3, "citation_precision": 2,
        "clarification_trigger_accuracy": 7, "refusal_accuracy": 7, "abstention_accuracy": 2,
        "output_valid": 7, "proposal_accuracy": 0, "pending_report_accuracy": 0,
        "unavailable_rate": 9}


def test_a_failed_case_never_scores_as_right() -> None:
    failed = [outcome(surface, None) for surface in ("documentation", "clarify", "refuse")]

    metrics = assistant_metrics(failed)

    assert metrics["unavailable_rate"] == 1.0
    assert {k: v for k, v in metrics.items() if k != "unavailable_rate"} == dict.fromkeys(
        [k for k in METRIC_KEYS if k != "unavailable_rate"], 0.0)


def test_proposals_are_counted_where_a_case_expects_them() -> None:
    outcomes = [outcome("documentation", "answered", expected_proposals=1, proposals=1),
                outcome("documentation", "answered", expected_proposals=0, proposals=1,
                        claims_change=True),
                outcome("documentation", "answered")]

    metrics = assistant_metrics(outcomes)

    assert metrics["proposal_accuracy"] == 0.5
    assert metrics["pending_report_accuracy"] == 0.5


def test_nothing_to_measure_is_zero() -> None:
    assert set(assistant_metrics([]).values()) == {0.0}
    assert set(measured([]).values()) == {0}

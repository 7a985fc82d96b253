"""Level-1 assistant metrics: pure functions of case outcomes.

An outcome is what one message produced (status, cited labels, whether the stored text
passes the output policy) beside what its case expected. The surface a message ended on:
``refuse`` for a refusal or an abstention, ``clarify`` for a clarification,
``documentation`` for an answer citing documentation, none when respond() failed.

Each metric is a share in [0, 1], rounded to four places, over the cases it can be measured
on (:data:`DENOMINATORS` says which): a case whose respond() failed counts in
``unavailable_rate`` only. A metric with nothing to measure is 0.0, and the report's
``measured`` block gives each denominator so a 0.0 can be read.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

#: The statuses that decline to answer: a guardrail's refusal, or an abstention.
DECLINED = ("refused", "abstained")
METRIC_KEYS = ("surface_routing_accuracy", "citation_assembly", "citation_precision",
               "clarification_trigger_accuracy", "refusal_accuracy", "abstention_accuracy",
               "output_valid", "proposal_accuracy", "pending_report_accuracy",
               "unavailable_rate")
DENOMINATORS = {
    "surface_routing_accuracy": "cases that produced a message",
    "citation_assembly": "those expecting citations",
    "citation_precision": "those expecting citations whose answer cites something",
    "clarification_trigger_accuracy": "cases that produced a message",
    "refusal_accuracy": "cases that produced a message",
    "abstention_accuracy": "refuse cases no guardrail stopped",
    "output_valid": "cases that produced a message",
    "proposal_accuracy": "those expecting a number of proposals",
    "pending_report_accuracy": "messages carrying a proposal",
    "unavailable_rate": "every case",
}


@dataclass(frozen=True)
class AssistantOutcome:
    """One case: what it expected and what the message was."""

    case_id: str
    locale: str
    slices: tuple[str, ...]
    expected_surface: str
    expected_citations: tuple[str, ...]
    status: str | None  # None: respond() failed (unavailable)
    cited: tuple[str, ...] = ()
    output_valid: bool = False
    expected_proposals: int | None = None
    proposals: int = 0
    claims_change: bool = False

    @property
    def surface(self) -> str | None:
        """The surface the message ended on (see the module docstring)."""
        if self.status is None:
            return None
        if self.status in DECLINED:
            return "refuse"
        return "clarify" if self.status == "clarification" else "documentation"


def _precision(outcome: AssistantOutcome) -> float:
    return sum(label in outcome.expected_citations for label in outcome.cited) / len(
        outcome.cited)


def _samples(outcomes: Sequence[AssistantOutcome]) -> dict[str, Sequence[float]]:
    """Per metric, one value per case it is measured on. A case whose respond() failed
    counts in ``unavailable_rate`` only: it has no message to be right or wrong about."""
    produced = [o for o in outcomes if o.status is not None]
    expecting = [o for o in produced if o.expected_citations]
    proposing = [o for o in produced if o.proposals > 0]
    return {
        "surface_routing_accuracy": [o.surface == o.expected_surface for o in produced],
        "citation_assembly": [set(o.expected_citations) <= set(o.cited) for o in expecting],
        "citation_precision": [_precision(o) for o in expecting if o.cited],
        "clarification_trigger_accuracy": [
            (o.status == "clarification") == (o.expected_surface == "clarify")
            for o in produced],
        "refusal_accuracy": [(o.status in DECLINED) == (o.expected_surface == "refuse")
                             for o in produced],
        "abstention_accuracy": [o.status == "abstained" for o in produced
                                if o.expected_surface == "refuse" and o.status != "refused"],
        "output_valid": [o.output_valid for o in produced],
        "proposal_accuracy": [o.proposals == o.expected_proposals for o in produced
                              if o.expected_proposals is not None],
        "pending_report_accuracy": [not o.claims_change for o in proposing],
        "unavailable_rate": [o.status is None for o in outcomes],
    }


def assistant_metrics(outcomes: Sequence[AssistantOutcome]) -> dict[str, float]:
    """Every metric of :data:`METRIC_KEYS` over ``outcomes``."""
    samples = _samples(outcomes)
    return {key: (round(sum(samples[key]) / len(samples[key]), 4) if samples[key] else 0.0)
            for key in METRIC_KEYS}


def measured(outcomes: Sequence[AssistantOutcome]) -> dict[str, int]:
    """How many cases each metric was measured on."""
    samples = _samples(outcomes)
    return {key: len(samples[key]) for key in METRIC_KEYS}

"""Report metrics over per-case outcomes: pure functions shared by every evaluation.

An evaluation turns each dataset case into a :class:`CaseOutcome` (what was returned, what
was expected, how long it took); these functions turn outcomes into the rounded metric
blocks of a report, overall and per slice. Denominators (as in the laraplate reports):

- hit@k and MRR: cases with ground truth (non-empty ``relevant``);
- precision, recall and nDCG at 1, 3, 5: cases with ground truth;
- citation precision: every label returned by every case (micro average);
- authorized-empty accuracy: cases expecting an authorized empty answer;
- supported-answer rate: cases expecting a supported answer;
- refusal / abstention accuracy and unavailable rate: every case.

A ratio with nothing to divide by is 0.0.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from ragplate.tasks.evaluation.metrics import (
    CUTOFFS,
    first_rank,
    latency_summary,
    ndcg_at_k,
    precision_at_k,
    ratio,
    recall_at_k,
    rounded,
)


@dataclass(frozen=True)
class CaseOutcome:
    """What one case returned against what it expected (no query text, no content).

    ``ranked`` are the returned labels or ids in rank order; ``relevant`` the expected
    ones (``expected_source_labels`` / ``expected_hit_ids``); ``citable`` those an answer
    may cite; ``expect_empty`` is ``expect_refusal`` (documentation) or
    ``expect_abstention`` (application content). A case whose retrieval raised is
    ``unavailable`` and returned nothing (fail closed).
    """

    case_id: str
    locale: str
    slices: tuple[str, ...]
    ranked: tuple[str, ...]
    relevant: tuple[str, ...]
    citable: tuple[str, ...]
    expect_authorized_empty: bool
    expect_supported_answer: bool
    expect_empty: bool
    unavailable: bool = False
    latency_ms: float = 0.0

    @property
    def empty(self) -> bool:
        """Nothing was returned (a refusal, an authorized empty answer or a failure)."""
        return not self.ranked


Metrics = dict[str, float]
T = TypeVar("T")
MetricsFn = Callable[[Sequence[CaseOutcome]], Metrics]


def rank_metrics(outcomes: Sequence[CaseOutcome], cutoffs: Sequence[int] = CUTOFFS) -> Metrics:
    """``precision_at_k``, ``recall_at_k`` and ``ndcg_at_k`` for each cut-off, averaged over
    the cases with ground truth."""
    scored = [o for o in outcomes if o.relevant]
    block: Metrics = {}
    for name, fn in (("precision", precision_at_k), ("recall", recall_at_k),
                     ("ndcg", ndcg_at_k)):
        for k in cutoffs:
            total = sum(fn(o.ranked, o.relevant, k) for o in scored)
            block[f"{name}_at_{k}"] = ratio(total, len(scored))
    return block


def _answer_metrics(outcomes: Sequence[CaseOutcome], hit_depth: int | None) -> list[float]:
    """[hit, MRR, citation precision, authorized-empty, supported, empty-accuracy,
    unavailable] in that order; ``hit_depth`` ``None`` means "anywhere in the list"."""
    scored = [o for o in outcomes if o.relevant]
    hits = reciprocal = 0.0
    for o in scored:
        rank = first_rank(o.ranked, o.relevant)
        if rank is not None:
            hits += 1.0 if hit_depth is None or rank <= hit_depth else 0.0
            reciprocal += 1.0 / rank
    returned = sum(len(o.ranked) for o in outcomes)
    cited = sum(1 for o in outcomes for label in o.ranked if label in set(o.citable))
    authorized = [o for o in outcomes if o.expect_authorized_empty]
    supported = [o for o in outcomes if o.expect_supported_answer]
    return [
        ratio(hits, len(scored)),
        ratio(reciprocal, len(scored)),
        ratio(cited, returned),
        ratio(sum(1 for o in authorized if o.empty), len(authorized)),
        ratio(sum(1 for o in supported if not o.empty), len(supported)),
        ratio(sum(1 for o in outcomes if o.empty == o.expect_empty), len(outcomes)),
        ratio(sum(1 for o in outcomes if o.unavailable), len(outcomes)),
    ]


DOCUMENTATION_KEYS: tuple[str, ...] = (
    "source_hit_at_k", "mean_reciprocal_rank", "citation_precision",
    "authorized_empty_accuracy", "supported_answer_rate", "refusal_accuracy",
    "unavailable_rate",
)
APPLICATION_CONTENT_KEYS: tuple[str, ...] = (
    "hit_at_5", "mean_reciprocal_rank", "citation_precision", "authorized_empty_accuracy",
    "supported_answer_rate", "abstention_accuracy", "unavailable_rate",
)
RANK_KEYS: tuple[str, ...] = tuple(
    f"{name}_at_{k}" for name in ("precision", "recall", "ndcg") for k in CUTOFFS
)


def documentation_metrics(outcomes: Sequence[CaseOutcome]) -> Metrics:
    """The laraplate documentation metrics (hit counted anywhere in the returned top-k),
    then the rank metrics at 1, 3 and 5."""
    values = _answer_metrics(outcomes, None)
    return {**dict(zip(DOCUMENTATION_KEYS, values, strict=True)), **rank_metrics(outcomes)}


def application_content_metrics(outcomes: Sequence[CaseOutcome]) -> Metrics:
    """The application-content metrics (``hit_at_5``: a relevant hit in the first five;
    ``abstention_accuracy``), then the rank metrics at 1, 3 and 5."""
    values = _answer_metrics(outcomes, 5)
    return {**dict(zip(APPLICATION_CONTENT_KEYS, values, strict=True)),
            **rank_metrics(outcomes)}


def by_slices(outcomes: Sequence[CaseOutcome],
              metrics: Callable[[Sequence[CaseOutcome]], T]) -> dict[str, dict[str, T]]:
    """``{"locale": {locale: metrics}, "category": {slice tag: metrics}}``, keys sorted
    (code-point order), so the report's key order never depends on the dataset's order."""
    locales: dict[str, list[CaseOutcome]] = {}
    categories: dict[str, list[CaseOutcome]] = {}
    for outcome in outcomes:
        locales.setdefault(outcome.locale, []).append(outcome)
        for tag in outcome.slices:
            categories.setdefault(tag, []).append(outcome)
    return {
        "locale": {key: metrics(locales[key]) for key in sorted(locales)},
        "category": {key: metrics(categories[key]) for key in sorted(categories)},
    }


#: The metrics measured over the cases with ground truth (the rest: every case, but the
#: two measured over the cases expecting them, and citation precision, over every label
#: returned, counted here by its cases).
_SCORED_KEYS = frozenset({"source_hit_at_k", "hit_at_5", "mean_reciprocal_rank",
                          *RANK_KEYS})


def measured(outcomes: Sequence[CaseOutcome]) -> dict[str, int]:
    """How many cases each metric of the documentation and application-content reports is
    measured over (its denominator, see the module docstring): a metric over no case is a
    0.0 that measures nothing, which the page and the console show as ``n/a``. The report
    itself keeps its schema; this is computed beside it."""
    scored = sum(1 for o in outcomes if o.relevant)
    counts = {"authorized_empty_accuracy": sum(1 for o in outcomes
                                               if o.expect_authorized_empty),
              "supported_answer_rate": sum(1 for o in outcomes if o.expect_supported_answer)}
    for key in (*DOCUMENTATION_KEYS, *APPLICATION_CONTENT_KEYS, *RANK_KEYS):
        counts.setdefault(key, scored if key in _SCORED_KEYS else len(outcomes))
    return counts


def measured_by_scope(outcomes: Sequence[CaseOutcome]) -> dict[str, Any]:
    """:func:`measured` overall and per slice, shaped as the report's blocks:
    ``{"metrics": counts, "slices": {"locale": {name: counts}, "category": {...}}}``."""
    return {"metrics": measured(outcomes), "slices": by_slices(outcomes, measured)}


def latency(outcomes: Sequence[CaseOutcome]) -> dict[str, float]:
    """The latency block of a report (average, p50, p95, max in milliseconds)."""
    return latency_summary([o.latency_ms for o in outcomes])


__all__ = [
    "APPLICATION_CONTENT_KEYS",
    "DOCUMENTATION_KEYS",
    "RANK_KEYS",
    "CaseOutcome",
    "application_content_metrics",
    "by_slices",
    "documentation_metrics",
    "latency",
    "measured",
    "measured_by_scope",
    "rank_metrics",
    "rounded",
]

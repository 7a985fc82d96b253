"""Per-strategy retrieval quality: record each case's rankings once, score every strategy.

For every case with ``expected_hit_ids``, application search runs twice, in the case's
locale and as its tenant, with the retrieval tuning profile switched on:

- reranker off (``balanced``): the ``keyword``, ``vector`` and ``hybrid`` orderings with
  their scores (``AppSearchResult.per_strategy``) and the ``fused`` ordering it serves;
- reranker on (``deep``): the ``reranked`` ordering, whether the reranker really ran
  (``meta.reranked``) and the model its server named.

Nothing is queried twice for tuning: ``tune-retrieval`` re-fuses these recordings. Every
ordering is cut at the case's ``limit`` before it is scored. A strategy is averaged over
the scored cases where it ran (vector and hybrid do not run when the query could not be
embedded); ``fused`` and ``reranked`` always run; a strategy that never ran is left out.
The search is not re-authorized afterwards, hence ``pre_authorization: true``: this is a
ranking diagnostic, not an access-control check.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ragplate.catalog.datasets import ApplicationContentCase, ApplicationContentDataset
from ragplate.catalog.search_tuning import PROFILE, QueryClass
from ragplate.tasks.evaluation.application_content import ContentSetup, header, outcome, prefixed
from ragplate.tasks.evaluation.dataset_files import LoadedDataset
from ragplate.tasks.evaluation.scoring import RANK_KEYS, CaseOutcome, application_content_metrics
from ragplate.tasks.retrieval.query_class import classify
from ragplate.tasks.retrieval.strategy import Reranker, RerankerFactory, RerankScores

log = logging.getLogger(__name__)

ORDERINGS: tuple[str, ...] = ("keyword", "vector", "hybrid", "fused", "reranked")
IR_KEYS: tuple[str, ...] = ("hit_at_5", "mean_reciprocal_rank", *RANK_KEYS)
NOT_RUN_WARNING = ("the reranker did not run on {missing} of {requested} cases (status "
                   "{status}): the reranked figures are the fused ones under another name. "
                   "Configure RAGPLATE_SERVERS__RERANK__URL, start the rerank server "
                   "(ragplate servers check) and run again.")


@dataclass(frozen=True)
class RecordedCase:
    """One scored case's rankings. ``rankings`` holds ``(id, score)`` of the strategies
    that ran, full depth, ids prefixed by the source; the query stays in memory only (the
    fusion's planner needs its length) and never reaches a report."""

    case: ApplicationContentCase
    query_class: QueryClass
    rankings: dict[str, list[tuple[str, float]]]
    fused: tuple[str, ...]
    reranked: tuple[str, ...]
    reranker_ran: bool
    reranker_model: str | None = None
    unavailable: bool = False

    def ordering(self, name: str) -> tuple[str, ...] | None:
        """The ids of one ordering (``None``: that strategy did not run)."""
        if name == "fused":
            return self.fused
        if name == "reranked":
            return self.reranked
        ranking = self.rankings.get(name)
        return None if ranking is None else tuple(i for i, _ in ranking)


@dataclass
class _ModelRecorder:
    """Wraps the reranker to remember the model its server named."""

    inner: Reranker
    models: list[str | None] = field(default_factory=list)

    def rerank(self, query: str, texts: Sequence[str]) -> RerankScores:
        result = self.inner.rerank(query, texts)
        self.models.append(getattr(result, "model", None))
        return result


def record_case(case: ApplicationContentCase, source: str, setup: ContentSetup,
                reranker_factory: RerankerFactory | None) -> RecordedCase:
    """Search ``case`` with the reranker off, then on (see the module docstring)."""
    tuned = setup.settings.model_copy(update={"search_adaptive_tuning": True})
    query_class = classify(case.query)
    try:
        off = setup.search(case, source, "balanced", settings=tuned)
    except Exception as exc:  # fail closed: an unavailable case scores nothing
        log.warning("case %s: search failed (%s)", case.id, type(exc).__name__)
        return RecordedCase(case, query_class, {"keyword": []}, (), (), False,
                            unavailable=True)
    rankings = {name: [(f"{source}:{key}", score) for key, score in
                       zip(ids, off.per_strategy_scores[name], strict=True)]
                for name, ids in off.per_strategy.items()}
    recorders: list[_ModelRecorder] = []

    def factory() -> Reranker:
        assert reranker_factory is not None
        recorders.append(_ModelRecorder(reranker_factory()))
        return recorders[-1]

    try:
        on = setup.search(case, source, "deep", settings=tuned,
                          reranker_factory=factory if reranker_factory else None)
    except Exception as exc:
        log.warning("case %s: reranked search failed (%s)", case.id, type(exc).__name__)
        reranked, ran, model = prefixed(source, off), False, None
    else:
        reranked, ran = prefixed(source, on), on.meta.reranked
        named = [m for r in recorders for m in r.models if m]
        model = named[-1] if ran and named else None
    return RecordedCase(case, query_class, rankings, prefixed(source, off), reranked, ran, model)


def record_cases(dataset: ApplicationContentDataset, setup: ContentSetup) -> list[RecordedCase]:
    """Record every case that carries ground truth (the others cannot be ranked)."""
    return [record_case(case, dataset.source, setup, setup.reranker_factory)
            for case in dataset.cases if case.expected_hit_ids]


def ir_metrics(outcomes: Sequence[CaseOutcome]) -> dict[str, float]:
    """hit@5, MRR and precision/recall/nDCG at 1, 3, 5 (part A's math)."""
    block = application_content_metrics(outcomes)
    return {key: block[key] for key in IR_KEYS}


def cut(recorded: RecordedCase, ids: Sequence[str]) -> CaseOutcome:
    """The outcome of ``ids`` cut at the case's ``limit``."""
    return outcome(recorded.case, ids[:recorded.case.limit], unavailable=recorded.unavailable)


def strategy_metrics(recorded: Sequence[RecordedCase]) -> tuple[dict[str, Any], dict[str, int]]:
    """``({ordering: IR metrics}, {ordering: cases it ran on})``, orderings that never ran
    left out."""
    metrics: dict[str, Any] = {}
    cases: dict[str, int] = {}
    for name in ORDERINGS:
        outcomes = [cut(r, ids) for r in recorded
                    if (ids := r.ordering(name)) is not None]
        if outcomes:
            metrics[name] = ir_metrics(outcomes)
            cases[name] = len(outcomes)
    return metrics, cases


def reranker_block(recorded: Sequence[RecordedCase]) -> dict[str, Any]:
    """``{requested, ran, status, model}``: status ``ran`` (every case), ``partial`` or
    ``not_run``; ``model`` is the one the rerank server named (``None`` when none did)."""
    requested = len(recorded)
    ran = sum(1 for r in recorded if r.reranker_ran)
    status = "ran" if requested and ran == requested else "partial" if ran else "not_run"
    models = sorted({r.reranker_model for r in recorded if r.reranker_model})
    return {"requested": requested, "ran": ran, "status": status,
            "model": models[0] if len(models) == 1 else (", ".join(models) or None)}


def reranker_warning(block: dict[str, Any]) -> str | None:
    """The warning printed when the reranker did not run on every case."""
    if block["status"] == "ran":
        return None
    return NOT_RUN_WARNING.format(missing=block["requested"] - block["ran"],
                                  requested=block["requested"], status=block["status"])


def build_report(loaded: LoadedDataset[ApplicationContentDataset],
                 recorded: Sequence[RecordedCase], setup: ContentSetup,
                 context: dict[str, Any]) -> dict[str, Any]:
    """The strategies report: header, ``pre_authorization``, IR metrics per ordering,
    the cases each ran on, the reranker block, then the context."""
    metrics, cases = strategy_metrics(recorded)
    return {
        **header(loaded, setup),
        "scored_case_count": len(recorded),
        "pre_authorization": True,
        "metrics": metrics,
        "strategy_cases": cases,
        "reranker": reranker_block(recorded),
        "fusion": {"adaptive_tuning": True, "tuning_profile_version": PROFILE.version,
                   "unavailable_cases": sum(1 for r in recorded if r.unavailable)},
        **context,
    }


def report_title(report: dict[str, Any]) -> str:
    """The title of a strategies report's page and artifacts."""
    return f"evaluate-retrieval-strategies: {report['source']} ({report['driver']})"

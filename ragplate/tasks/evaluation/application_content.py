"""Application-content evaluation: run a dataset's cases through application search (the
real ranking pipeline, no chat model) and build the report.

Each case is searched in the locale it declares, as its principal's tenant, with its
``limit``; the hits' keys, prefixed by the source (``cms.contents:12``), are graded against
``expected_hit_ids``. A search that raises makes its case ``unavailable`` with nothing
returned (fail closed). The metrics are part A's (:mod:`ragplate.tasks.evaluation.scoring`), overall
and per locale and category slice; the report holds aggregates only (no query, no id, no
content) plus the context it was measured in.

What answers the cases is a :class:`ContentSetup`: the configured database, serving
profile and reranker (``live``), or the seeded fixture corpus with the hashing embedder
(:mod:`ragplate.tasks.records.fixtures`, ``deterministic``: latency is not measured, so the
report is byte-identical on every run and machine).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from sqlalchemy.engine import Engine

from ragplate.catalog.datasets import (
    ApplicationContentCase,
    ApplicationContentDataset,
    DatasetError,
)
from ragplate.catalog.entities import get_entity
from ragplate.catalog.errors import InvalidInputError
from ragplate.catalog.profiles import EmbeddingProfile
from ragplate.catalog.settings import Settings
from ragplate.infra.models.base import Embedder
from ragplate.infra.records.engines import RecordSearch
from ragplate.infra.records.texts import count_texts
from ragplate.infra.records.vectors import count_vectors
from ragplate.tasks.evaluation.dataset_files import LoadedDataset
from ragplate.tasks.evaluation.scoring import (
    CaseOutcome,
    application_content_metrics,
    by_slices,
    latency,
)
from ragplate.tasks.retrieval.application import AppSearchResult, search_records
from ragplate.tasks.retrieval.strategy import EmbedderFactory, Mode, RerankerFactory

if TYPE_CHECKING:
    from ragplate.infra.runtime import Runtime

log = logging.getLogger(__name__)

SCHEMA_VERSION = "1"
LIVE_DRIVER = "postgresql"


class QueryMemo:
    """An embedder that embeds each distinct query once per run: a case is searched more
    than once (reranker off and on), and the model's cost is not what is measured."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.profile: EmbeddingProfile = inner.profile
        self._queries: dict[str, np.ndarray] = {}

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self.inner.embed_passages(texts)

    def embed_query(self, text: str) -> np.ndarray:
        if text not in self._queries:
            self._queries[text] = self.inner.embed_query(text)
        return self._queries[text]


def memoized(factory: Callable[[], Embedder]) -> EmbedderFactory:
    """A factory building the embedder once (a failure is retried on the next call)."""
    built: list[QueryMemo] = []

    def build() -> Embedder:
        if not built:
            built.append(QueryMemo(factory()))
        return built[0]

    return build


@dataclass(frozen=True)
class ContentSetup:
    """What answers the cases, and the context a report records."""

    engine: Engine
    serving: EmbeddingProfile
    embedder_factory: EmbedderFactory
    reranker_factory: RerankerFactory | None
    settings: Settings
    driver: str
    timed: bool
    #: The engine that ranks (``None``: PostgreSQL through ``engine``).
    records: RecordSearch | None = None

    def search(self, case: ApplicationContentCase, source: str, mode: Mode, *,
               reranker_factory: RerankerFactory | None = None,
               settings: Settings | None = None) -> AppSearchResult:
        """Search ``case`` as its principal, in its locale, for its ``limit`` hits."""
        return search_records(
            self.engine, entity=source, query=case.query, mode=mode, locale=case.locale,
            serving=self.serving, embedder_factory=self.embedder_factory,
            reranker_factory=reranker_factory, tenant=case.authorization.tenant,
            top_k=case.limit, settings=settings or self.settings, records=self.records)


def live_setup(runtime: Runtime) -> ContentSetup:
    """The configured database, serving profile, embedder and reranker."""
    from ragplate.tasks.retrieval.strategy import configured_reranker

    serving = runtime.active_profile()
    return ContentSetup(runtime.engine, serving, memoized(lambda: runtime.embedder(serving)),
                        configured_reranker(runtime.settings), runtime.settings, LIVE_DRIVER,
                        timed=True, records=runtime.record_search)


def fixture_setup(engine: Engine, settings: Settings,
                  reranker_factory: RerankerFactory | None = None) -> ContentSetup:
    """The seeded fixture corpus (see :mod:`ragplate.tasks.records.fixtures`), searched with
    the hashing embedder; latency is not measured."""
    from ragplate.tasks.records.fixtures import FIXTURE_DRIVER, FIXTURE_PROFILE, fixture_embedder

    return ContentSetup(engine, FIXTURE_PROFILE, memoized(fixture_embedder), reranker_factory,
                        settings, FIXTURE_DRIVER, timed=False)


def check_dataset(dataset: ApplicationContentDataset, source: str, settings: Settings) -> None:
    """The dataset targets ``source``, a declared entity, and asks only for the
    authorization application search enforces (a tenant): evaluation-only filters would
    silently not apply, so a case carrying any is refused."""
    get_entity(source, settings)
    if dataset.source != source:
        raise DatasetError(f"--source {source}: the dataset's source is {dataset.source!r}",
                           field="source")
    for case in dataset.cases:
        if case.authorization.filters:
            raise DatasetError(f"case '{case.id}', field 'authorization.filters': "
                               f"{source} search enforces the tenant only; filters are not "
                               "supported", case_id=case.id, field="authorization.filters")


def prefixed(source: str, result: AppSearchResult) -> tuple[str, ...]:
    """The hits' keys as dataset ids (``<source>:<key>``)."""
    return tuple(f"{source}:{hit.id}" for hit in result.hits)


def outcome(case: ApplicationContentCase, ranked: Sequence[str], *, unavailable: bool = False,
            latency_ms: float = 0.0) -> CaseOutcome:
    """A case's :class:`CaseOutcome` for ``ranked`` ids."""
    return CaseOutcome(
        case_id=case.id, locale=case.locale, slices=tuple(case.slices), ranked=tuple(ranked),
        relevant=tuple(case.expected_hit_ids), citable=tuple(case.expected_citation_ids),
        expect_authorized_empty=case.expect_authorized_empty,
        expect_supported_answer=case.expect_supported_answer,
        expect_empty=case.expect_abstention, unavailable=unavailable, latency_ms=latency_ms)


@dataclass(frozen=True)
class ServedSummary:
    """How the searches were served: modes and degradation reasons, counted."""

    modes: dict[str, int]
    degraded: dict[str, int]


def run_cases(dataset: ApplicationContentDataset, setup: ContentSetup, mode: Mode,
              clock: Callable[[], float] = time.perf_counter,
              ) -> tuple[list[CaseOutcome], ServedSummary]:
    """Answer every case through application search in ``mode``."""
    outcomes: list[CaseOutcome] = []
    modes: dict[str, int] = {}
    degraded: dict[str, int] = {}
    for case in dataset.cases:
        started = clock()
        try:
            result = setup.search(case, dataset.source, mode,
                                  reranker_factory=setup.reranker_factory)
        except Exception as exc:  # fail closed: a failure is a measured outcome
            log.warning("case %s: search failed (%s)", case.id, type(exc).__name__)
            ranked: tuple[str, ...] = ()
            unavailable = True
            modes["unavailable"] = modes.get("unavailable", 0) + 1
        else:
            ranked, unavailable = prefixed(dataset.source, result), False
            modes[result.meta.mode] = modes.get(result.meta.mode, 0) + 1
            if result.meta.degraded_reason:
                reason = result.meta.degraded_reason
                degraded[reason] = degraded.get(reason, 0) + 1
        elapsed = max(0.0, (clock() - started) * 1000.0) if setup.timed else 0.0
        outcomes.append(outcome(case, ranked, unavailable=unavailable, latency_ms=elapsed))
    return outcomes, ServedSummary(dict(sorted(modes.items())), dict(sorted(degraded.items())))


def corpus_context(setup: ContentSetup, source: str) -> dict[str, int]:
    """``size``: searchable texts (records × translations); ``vectors``: rows of the
    serving profile."""
    entity = get_entity(source, setup.settings)
    with setup.engine.connect() as conn:
        size = count_texts(conn, entity)
        vectors = count_vectors(conn, model_key=setup.serving.key, entity=source)
    return {"size": size, "vectors": vectors}


def require_texts(setup: ContentSetup, source: str) -> None:
    """Refuse to evaluate ``source`` when it holds no searchable text: every case would
    score 0 (and expected-empty cases 1), a report of nothing rather than a figure."""
    if corpus_context(setup, source)["size"] == 0:
        raise InvalidInputError(f"--source {source}: no published record to search; load or "
                                f"publish records before evaluating")


def context(loaded: LoadedDataset[ApplicationContentDataset], setup: ContentSetup,
            ) -> dict[str, Any]:
    """The context keys every application-content report ends with."""
    profile = setup.serving
    return {"embedding": {"profile": profile.key, "service_model": profile.service_model,
                          "dimensions": profile.dimensions},
            "corpus": corpus_context(setup, loaded.data.source),
            "dataset": {"sha256": loaded.sha256}}


def header(loaded: LoadedDataset[ApplicationContentDataset], setup: ContentSetup,
           ) -> dict[str, Any]:
    """The keys every application-content report starts with."""
    dataset = loaded.data
    return {"schema_version": SCHEMA_VERSION, "source": dataset.source,
            "driver": setup.driver, "dataset_version": dataset.version,
            "corpus_revision": dataset.corpus_revision,
            "data_classification": dataset.data_classification,
            "case_count": len(dataset.cases)}


def build_report(loaded: LoadedDataset[ApplicationContentDataset],
                 outcomes: list[CaseOutcome], served: ServedSummary, setup: ContentSetup,
                 mode: Mode) -> dict[str, Any]:
    """The application-content report: header, metrics, latency, slices (locale and
    category), how the searches were served, then the context."""
    return {
        **header(loaded, setup),
        "metrics": application_content_metrics(outcomes),
        "latency_ms": latency(outcomes),
        "slices": by_slices(outcomes, application_content_metrics),
        "search": {"mode": mode, "served": served.modes, "degraded": served.degraded,
                   "adaptive_tuning": setup.settings.search_adaptive_tuning,
                   "latency_measured": setup.timed},
        **context(loaded, setup),
    }


def report_title(report: dict[str, Any]) -> str:
    """The title of an application-content report's page and artifacts."""
    return (f"evaluate-application-content: {report['source']} "
            f"({report['driver']}, {report['search']['mode']})")

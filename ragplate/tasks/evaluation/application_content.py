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
import re
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from sqlalchemy.engine import Engine

from ragplate.catalog.datasets import (
    ApplicationContentCase,
    ApplicationContentDataset,
    DatasetError,
)
from ragplate.catalog.entities import Entity, get_entity
from ragplate.catalog.errors import InvalidInputError
from ragplate.catalog.profiles import EmbeddingProfile
from ragplate.catalog.settings import Settings
from ragplate.infra.models.base import Embedder
from ragplate.infra.records.engines import RecordSearch
from ragplate.infra.records.texts import count_texts, record_texts
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


def check_dataset(dataset: ApplicationContentDataset, source: str, settings: Settings, *,
                  where: str | Path | None = None) -> None:
    """The dataset targets ``source``, a declared entity, and asks only for the
    authorization application search enforces (a tenant): evaluation-only filters would
    silently not apply, so a case carrying any is refused. ``where``: the file, named
    first in a refusal."""
    entity = get_entity(source, settings)
    if dataset.source != source:
        raise DatasetError(f"--source {source}: the dataset's source is {dataset.source!r}",
                           field="source")
    refuse_filters(dataset, where=where)
    refuse_unholdable_ids(dataset, entity, where=where)


def refuse_unholdable_ids(dataset: ApplicationContentDataset, entity: Entity, *,
                          where: str | Path | None = None) -> None:
    """Refuse an expected hit or citation id whose record key ``entity`` can never hold
    (:func:`holdable_key`: ``cms.contents:abc`` for an integer key): search never returns
    it, so its case would score as a miss in silence. The error names the case and the
    field, and the id unless the dataset is private."""
    named = f"{where}: " if where is not None else ""
    prefix = f"{dataset.source}:"
    shape = ("an integer in its plain form, e.g. 42" if entity.key_type in INTEGER_KEY_MAX
             else "a lowercase UUID" if entity.key_type == "uuid" else "a key")
    for case in dataset.cases:
        for field in ("expected_hit_ids", "expected_citation_ids"):
            for position, hit_id in enumerate(getattr(case, field)):
                if holdable_key(hit_id.removeprefix(prefix), entity):
                    continue
                shown = ("an id" if dataset.data_classification == "private"
                         else f"{hit_id!r}")
                raise DatasetError(
                    f"{named}case '{case.id}', field '{field}.{position}': {shown} is not "
                    f"'{prefix}<record key>' with a {entity.key_type} key ({shape})",
                    case_id=case.id, field=f"{field}.{position}")


def refuse_filters(dataset: ApplicationContentDataset, *,
                   where: str | Path | None = None) -> None:
    """Refuse a case carrying authorization filters: application search enforces the
    tenant only, so they would silently not apply (``evaluate check`` says so too)."""
    named = f"{where}: " if where is not None else ""
    for case in dataset.cases:
        if case.authorization.filters:
            raise DatasetError(f"{named}case '{case.id}', field 'authorization.filters': "
                               f"{dataset.source} search enforces the tenant only; filters "
                               "are not supported", case_id=case.id,
                               field="authorization.filters")


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


#: The largest key of each integer key type (PostgreSQL's ``integer`` and ``bigint``).
INTEGER_KEY_MAX = {"integer": 2**31 - 1, "bigint": 2**63 - 1}


def holdable_key(key: str, entity: Entity) -> bool:
    """Whether ``key`` is a key of ``entity`` as search returns it (the key cast to text):
    a number in its plain form for an integer key, a lowercase UUID for a uuid key. Any
    other key can never be a hit, and would not cast."""
    if entity.key_type in INTEGER_KEY_MAX:
        limit = INTEGER_KEY_MAX[entity.key_type]
        return bool(re.fullmatch(r"0|-?[1-9][0-9]{0,18}", key)) and -limit - 1 <= int(key) <= limit
    if entity.key_type == "uuid":
        try:
            return str(uuid.UUID(key)) == key
        except ValueError:
            return False
    return True


def absent_hit_ids(dataset: ApplicationContentDataset, setup: ContentSetup) -> list[str]:
    """The expected hit ids (``<source>:<key>``) whose record the source does not hold as a
    searchable text (missing, unpublished or empty): search can never return them, so their
    cases can only score through other ids, a cap worth knowing before reading the
    figures."""
    entity = get_entity(dataset.source, setup.settings)
    prefix = f"{dataset.source}:"
    expected = {hit_id for case in dataset.cases for hit_id in case.expected_hit_ids}
    keys = sorted({hit_id.removeprefix(prefix) for hit_id in expected
                   if holdable_key(hit_id.removeprefix(prefix), entity)})
    held: set[str] = set()
    if keys:
        with setup.engine.connect() as conn:
            held = {text.record_key for text in record_texts(conn, entity, keys=keys)}
    return sorted(hit_id for hit_id in expected if hit_id.removeprefix(prefix) not in held)


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

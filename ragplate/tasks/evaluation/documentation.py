"""Documentation evaluation: run a dataset's cases through the real retrieval path and
build the report.

Each case is answered by :func:`ragplate.tasks.retrieval.documentation.retrieve_developer`
or :func:`~ragplate.tasks.retrieval.documentation.retrieve_user` with the case's principal
(tenant, locale, permissions), so the user index's audience, tenant, permission and locale
filters and its safe projection all run. Only what the retrieval searches differs between
the two modes:

- ``live``: the configured store of the active embedding profile (a real index, built
  beforehand with ``ragplate index-docs``);
- ``deterministic`` (Level 1, for CI): a committed fixture corpus indexed on the fly into
  the in-memory store with a feature-hashing embedder (:data:`FIXTURE_PROFILE`, lexical and
  deterministic) and fixed splitter sizes; latency is not measured (0.0), so the report is
  byte-identical on every run and machine.

Grading identity is the hit's label: the file label on the developer index, the safe
source label on the user index. A retrieval that raises makes its case ``unavailable``
with nothing returned (fail closed).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ragplate.catalog.datasets import DatasetError, DocumentationCase, DocumentationDataset
from ragplate.catalog.documents import AccessContext, AudiencePolicy, Document
from ragplate.catalog.errors import InvalidInputError
from ragplate.catalog.profiles import EmbeddingProfile
from ragplate.catalog.settings import PROJECT_ROOT, DocsRetrieval
from ragplate.catalog.text import without_paths
from ragplate.infra.models.base import Embedder
from ragplate.infra.models.local import LocalEmbedder
from ragplate.infra.stores.base import DocumentStore, SourceRecord
from ragplate.infra.stores.memory import MemoryStore
from ragplate.tasks.evaluation.dataset_files import LoadedDataset
from ragplate.tasks.evaluation.scoring import (
    CaseOutcome,
    by_slices,
    documentation_metrics,
    latency,
    measured,
)
from ragplate.tasks.indexing import index as indexing
from ragplate.tasks.indexing.read import developer_corpus, read_sources, user_corpus
from ragplate.tasks.indexing.split import MarkdownAwareSplitter, split_documents
from ragplate.tasks.retrieval.documentation import retrieve_developer, retrieve_user
from ragplate.tasks.retrieval.fusion import RRF_K

if TYPE_CHECKING:
    from ragplate.infra.runtime import Runtime

log = logging.getLogger(__name__)

Mode = Literal["deterministic", "live"]
MODES: tuple[Mode, ...] = ("deterministic", "live")
SCHEMA_VERSION = "1"

#: The committed Level-1 corpus: developer pages and user pages with full policy metadata.
FIXTURE_CORPUS = PROJECT_ROOT / "datasets" / "fixtures" / "documentation"
#: Lexical, deterministic, fast: the fixture corpus is indexed on every run.
FIXTURE_PROFILE = EmbeddingProfile(key="local:ragplate/fixture-hashing-256", dimensions=256,
                                   local_variant="hashing-256")
#: The recipe the Level-1 baselines were made with (the shipped default until ``ragplate
#: bench retrieval`` chose 120/20 and weight 0.5), fixed here so neither an environment
#: variable nor a change of default moves a baseline.
FIXTURE_SPLITTER = MarkdownAwareSplitter(max_words=200, overlap_words=0,
                                         prepend_heading_breadcrumb=True,
                                         prepend_source_label=True)
FIXTURE_CONTEXT_WEIGHT = 1.0
FIXTURE_RRF_K = RRF_K


@dataclass(frozen=True)
class RetrievalSetup:
    """What answers the cases, and the context the report records."""

    index: Literal["developer", "user"]
    mode: Mode
    store: DocumentStore
    embedder: Embedder
    policy: AudiencePolicy
    strategy: DocsRetrieval
    min_score: float | None = None
    rrf_k: int = RRF_K

    @property
    def driver(self) -> str:
        """The report's ``driver``: ``<index>-documentation`` (``-fixture`` in Level 1)."""
        suffix = "-fixture" if self.mode == "deterministic" else ""
        return f"{self.index}-documentation{suffix}"


def check_index(dataset: DocumentationDataset, index: str) -> None:
    """A dataset is evaluated on the index it was written for."""
    if dataset.index_profile != index:
        raise DatasetError(f"--index {index}: the dataset's index_profile is "
                           f"{dataset.index_profile!r}", field="index_profile")


def access_context(case: DocumentationCase) -> AccessContext:
    """The principal of a case: its tenant (none for a global principal), locale and
    permissions. No module filter: the dataset's module names the report card."""
    return AccessContext(tenant=case.tenant, locale=case.locale,
                         permissions=frozenset(case.effective_permissions))


def _answer(setup: RetrievalSetup, case: DocumentationCase,
            min_score: float | None) -> list[Any]:
    if setup.index == "developer":
        return retrieve_developer(case.query, store=setup.store, embedder=setup.embedder,
                                  top_k=case.top_k, min_score=min_score,
                                  strategy=setup.strategy, rrf_k=setup.rrf_k)
    return retrieve_user(case.query, store=setup.store, embedder=setup.embedder,
                         access=access_context(case), policy=setup.policy, top_k=case.top_k,
                         min_score=min_score, strategy=setup.strategy, rrf_k=setup.rrf_k)


def case_retriever(setup: RetrievalSetup) -> Callable[[DocumentationCase], list[str]]:
    """A function answering one case with the labels the real retrieval returns."""

    def retrieve(case: DocumentationCase) -> list[str]:
        return [hit.source_label for hit in _answer(setup, case, setup.min_score)]

    return retrieve


def unfloored_hits(setup: RetrievalSetup,
                   ) -> Callable[[DocumentationCase], list[tuple[str, float]]]:
    """A function answering one case without a similarity floor: ``(label, similarity)``
    of each hit (what ``tune-floor`` replays)."""

    def retrieve(case: DocumentationCase) -> list[tuple[str, float]]:
        return [(hit.source_label, hit.similarity) for hit in _answer(setup, case, None)]

    return retrieve


def measured_cases(dataset: DocumentationDataset) -> dict[str, int]:
    """How many cases each overall metric is measured over
    (:func:`ragplate.tasks.evaluation.scoring.measured`): known from the dataset alone, so
    the console can show a metric over no case as ``n/a`` from the report and the dataset."""
    return measured([CaseOutcome(
        case_id=c.id, locale=c.locale, slices=tuple(c.slices), ranked=(),
        relevant=tuple(c.expected_source_labels), citable=(),
        expect_authorized_empty=c.expect_authorized_empty,
        expect_supported_answer=c.expect_supported_answer, expect_empty=c.expect_refusal)
        for c in dataset.cases])


#: The longest reason a failed case's log line quotes.
MAX_REASON_CHARS = 200


def failure_reason(exc: BaseException, case: DocumentationCase, *, private: bool) -> str:
    """Why ``case`` failed, as its log line says it: the error's type and the first line of
    its message (a database error's SQL and parameters follow on later lines), with the
    query (and, for a private dataset, every expected label) masked, file paths left out
    and at most :data:`MAX_REASON_CHARS` characters. The run's logs reach the Prefect
    server; a dataset's questions never do."""
    lines = str(exc).strip().splitlines()
    text = lines[0].strip() if lines else ""
    masks = dict.fromkeys((case.query, case.query.strip(), repr(case.query)[1:-1]),
                          "(the query)")
    if private:
        for label in (*case.expected_source_labels, *case.expected_citation_labels):
            masks.setdefault(label, "(a label)")
    for secret in sorted((s for s in masks if s), key=len, reverse=True):
        text = text.replace(secret, masks[secret])
    text = without_paths(text)
    if len(text) > MAX_REASON_CHARS:
        text = text[:MAX_REASON_CHARS - 1] + "…"
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def run_cases(
    dataset: DocumentationDataset,
    retrieve: Callable[[DocumentationCase], list[str]],
    *,
    timed: bool = True,
    clock: Callable[[], float] = time.perf_counter,
) -> list[CaseOutcome]:
    """Answer every case; ``timed=False`` records 0.0 ms (deterministic reports)."""
    outcomes = []
    private = dataset.data_classification == "private"
    for case in dataset.cases:
        started = clock()
        unavailable = False
        try:
            labels = [str(label) for label in retrieve(case)]
        except Exception as exc:  # fail closed: a failure is a measured outcome
            log.warning("case %s: retrieval failed (%s)", case.id,
                        failure_reason(exc, case, private=private))
            labels, unavailable = [], True
        elapsed = max(0.0, (clock() - started) * 1000.0) if timed else 0.0
        outcomes.append(CaseOutcome(
            case_id=case.id, locale=case.locale, slices=tuple(case.slices),
            ranked=tuple(labels), relevant=tuple(case.expected_source_labels),
            citable=tuple(case.expected_citation_labels),
            expect_authorized_empty=case.expect_authorized_empty,
            expect_supported_answer=case.expect_supported_answer,
            expect_empty=case.expect_refusal, unavailable=unavailable, latency_ms=elapsed))
    return outcomes


def build_report(
    loaded: LoadedDataset[DocumentationDataset],
    outcomes: list[CaseOutcome],
    setup: RetrievalSetup,
) -> dict[str, Any]:
    """The report: the laraplate keys (``schema_version`` … ``slices``), then the context
    it was measured in (retrieval, embedding, corpus size, dataset hash). Aggregates only:
    no query, no label, no content."""
    dataset = loaded.data
    profile = setup.embedder.profile
    sources = setup.store.sources()
    return {
        "schema_version": SCHEMA_VERSION,
        "module": dataset.module,
        "index_profile": dataset.index_profile,
        "driver": setup.driver,
        "dataset_version": dataset.version,
        "corpus_revision": dataset.corpus_revision,
        "data_classification": dataset.data_classification,
        "case_count": len(outcomes),
        "metrics": documentation_metrics(outcomes),
        "latency_ms": latency(outcomes),
        "slices": by_slices(outcomes, documentation_metrics),
        "retrieval": {"mode": setup.mode, "strategy": setup.strategy,
                      "min_similarity": setup.min_score,
                      "latency_measured": setup.mode == "live"},
        "embedding": {"profile": profile.key, "service_model": profile.service_model,
                      "dimensions": profile.dimensions,
                      "vector_recipes": vector_recipes(sources.values())},
        "corpus": {"size": setup.store.count(), "sources": len(sources)},
        "dataset": {"sha256": loaded.sha256},
    }


def vector_recipes(records: Iterable[SourceRecord]) -> list[str]:
    """The distinct recipes the measured vectors were made with, sorted: one for an index
    built in one go, several when it was rebuilt only in part since the recipe changed
    (``unrecorded`` for sources stored before recipes were recorded)."""
    return sorted({r.vector_recipe or "unrecorded" for r in records})


def absent_labels(dataset: DocumentationDataset, setup: RetrievalSetup) -> list[str]:
    """The expected source labels no source of the index carries (developer index, where
    labels are sources; the user index cites section labels, not checked): cases citing
    them can only score through their other labels, a cap worth knowing before reading
    the figures."""
    if setup.index != "developer":
        return []
    stored = set(setup.store.sources())
    expected = {label for case in dataset.cases for label in case.expected_source_labels}
    return sorted(expected - stored)


def named(values: Sequence[str], classification: str) -> str:
    """The first values of a list for a log line, or, for a private dataset (whose
    questions and labels never leave its folder, and logs reach the Prefect server), a
    word saying they are withheld."""
    if classification == "private":
        return "not named (the dataset is private)"
    return ", ".join(values[:10]) + (" …" if len(values) > 10 else "")


def report_title(report: dict[str, Any]) -> str:
    """The title of a report's HTML page and artifacts."""
    retrieval = report["retrieval"]
    return (f"evaluate-documentation: {report['module']} / {report['index_profile']} "
            f"({retrieval['mode']}, {retrieval['strategy']})")


def summary_line(report: dict[str, Any], outcomes: Sequence[CaseOutcome]) -> str:
    """What a run prints of its report: hit@k and MRR when a case expects a source, the
    refusal accuracy when a case expects a refusal (with a word when no floor was set,
    as then every case returns hits), never a figure over no case."""
    metrics = report["metrics"]
    parts = []
    if any(o.relevant for o in outcomes):
        parts.append(f"hit@k {metrics['source_hit_at_k']}, MRR "
                     f"{metrics['mean_reciprocal_rank']}")
    else:
        parts.append("no case expects a source (hit@k and MRR do not apply)")
    if any(o.expect_empty for o in outcomes):
        refusal = f"refusal accuracy {metrics['refusal_accuracy']}"
        if report["retrieval"]["min_similarity"] is None:
            refusal += (" (no similarity floor: set RAGPLATE_MIN_SIMILARITY, "
                        "see ragplate tune-floor)")
        parts.append(refusal)
    return "; ".join(parts)


def fixture_setup(
    index: Literal["developer", "user"],
    *,
    strategy: DocsRetrieval,
    corpus: Path = FIXTURE_CORPUS,
    policy: AudiencePolicy | None = None,
) -> RetrievalSetup:
    """Index the fixture ``corpus`` (labels relative to it) into a fresh in-memory store
    of ``index`` through the plain indexing steps, for a deterministic run."""
    policy = policy or AudiencePolicy()
    documents = read_sources({"": corpus})
    selected = (developer_corpus(documents) if index == "developer"
                else user_corpus(documents, policy))
    embedder = LocalEmbedder(FIXTURE_PROFILE)
    store = index_in_memory(selected, index=index, embedder=embedder)
    return RetrievalSetup(index, "deterministic", store, embedder, policy, strategy,
                          rrf_k=FIXTURE_RRF_K)


def index_in_memory(documents: list[Document], *, index: str, embedder: Embedder
                    ) -> MemoryStore:
    """``documents`` split and embedded with the fixed Level-1 recipe
    (:data:`FIXTURE_SPLITTER`, :data:`FIXTURE_CONTEXT_WEIGHT`) into a fresh in-memory store
    of ``index``, through the plain indexing steps."""
    profile = embedder.profile
    store = MemoryStore(index, profile)
    store.reset()
    chunks = split_documents(documents, FIXTURE_SPLITTER)
    recipe = indexing.vector_recipe(FIXTURE_CONTEXT_WEIGHT)
    for batch in indexing.make_batches(documents, chunks, profile.key, batch_chunks=100,
                                       recipe=recipe):
        indexing.write_batch(store, batch, indexing.embed_batch(embedder, batch,
                                                                FIXTURE_CONTEXT_WEIGHT))
    return store


def live_setup(
    runtime: Runtime, index: Literal["developer", "user"], *, strategy: DocsRetrieval
) -> RetrievalSetup:
    """The configured store of the active profile, its embedder, the configured policy
    and similarity floor: what ``ragplate retrieve`` searches."""
    profile = runtime.active_profile()
    store = runtime.store(index, profile)
    if store.count() == 0:
        # Every case would score 0: a report of an unbuilt index is a mistake, not a figure.
        raise InvalidInputError(
            f"--index {index}: the index holds no chunks of the serving profile "
            f"{profile.key}; build it with `ragplate index-docs --profile {index}` first")
    return RetrievalSetup(index, "live", store, runtime.embedder(profile), runtime.policy,
                          strategy, runtime.settings.min_similarity, runtime.settings.docs_rrf_k)

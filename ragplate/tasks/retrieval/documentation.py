"""Developer and user documentation retrieval.

Developer retrieval searches the developer index, unfiltered. User retrieval puts the
audience, tenant, permission, locale (and module) filters inside the store query, then
re-checks the audience policy and keeps only the safe fields: a hit that fails either is
dropped (fail closed).

Both return ``top_k`` distinct labels (sources; safe source labels on the user index)
whenever the index holds that many: the vector ranking is fetched deeper and deeper until
enough distinct labels are found or the index is exhausted, so one long document's chunks
cannot crowd the others out. Both take a ``strategy`` (``RAGPLATE_DOCS_RETRIEVAL``, whose
default is ``adaptive``): ``vector``; ``hybrid``, where the store's keyword (BM25) ranking
and the vector ranking are each reduced to distinct labels and fused by reciprocal rank
fusion; or ``adaptive``, hybrid for a bare term or identifier and vector otherwise (see
:func:`resolve_strategy`). The user index's filters run inside both store queries.

Every hit carries two numbers: ``score``, its ranking's own (the cosine similarity in
vector mode, the fused RRF score in hybrid mode, so either in adaptive mode), and
``similarity``, the cosine of the query with the label's best chunk, in every mode: the one
scale a client can compare and threshold. ``min_score`` (``RAGPLATE_MIN_SIMILARITY``) is a
floor on ``similarity``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from ragplate.catalog.documents import (
    AccessContext,
    AudiencePolicy,
    IndexName,
    breadcrumb_text,
    safe_projection,
)
from ragplate.catalog.errors import ConfigurationError
from ragplate.catalog.settings import DocsRetrieval, clamp_top_k
from ragplate.catalog.text import check_text
from ragplate.infra.models.base import Embedder
from ragplate.infra.stores.base import (
    DocumentStore,
    KeywordSearch,
    SearchFilters,
    StoreHit,
    matches,
)
from ragplate.tasks.retrieval.fusion import RRF_K, reciprocal_rank_fusion
from ragplate.tasks.retrieval.query_class import classify

if TYPE_CHECKING:
    from ragplate.infra.runtime import Runtime

EXCERPT_CHARS = 600
#: Chunks fetched per requested hit at first; the depth doubles while labels are missing.
OVERFETCH = 4
#: Chunks each ranking contributes to a hybrid fusion, at least.
HYBRID_DEPTH = 50
#: The deepest a vector ranking is fetched while it holds fewer distinct labels than asked:
#: a principal who can see only a few long documents would otherwise fetch every chunk.
MAX_DEPTH = 4096
#: How many of its source's chunks are searched for a keyword-only label's similarity.
LABEL_DEPTH = 64
STRATEGIES: tuple[DocsRetrieval, ...] = ("vector", "hybrid", "adaptive")
#: Query classes that ``adaptive`` retrieval answers with the keyword ranking as well: a
#: bare term or identifier embeds into a vector that says little about where it is used.
KEYWORD_CLASSES = ("identifier", "short_keyword")
#: The keyword ranking's weight in an adaptive fusion (the vector ranking's is 1).
ADAPTIVE_KEYWORD_WEIGHT = 2.0


@dataclass(frozen=True)
class Hit:
    """One cited result: the best chunk of one label."""

    source_label: str
    heading_breadcrumb: list[str]
    excerpt: str
    score: float
    metadata: dict[str, Any]
    similarity: float = 0.0
    #: The whole chunk (the excerpt is cut): what the assistant's evidence is made of.
    text: str = ""
    #: The store's source of the chunk (internal: a user hit shows only its safe label).
    source: str = ""

    def as_dict(self) -> dict[str, Any]:
        """The public shape: label, breadcrumb, excerpt, score, similarity."""
        return {
            "source_label": self.source_label,
            "heading_breadcrumb": breadcrumb_text(self.heading_breadcrumb),
            "excerpt": self.excerpt,
            "score": round(self.score, 6),
            "similarity": round(self.similarity, 6),
        }


@dataclass(frozen=True)
class Ranked:
    """A label's chunk in a ranking, with its similarity to the query."""

    hit: StoreHit
    similarity: float


def excerpt(text: str, limit: int = EXCERPT_CHARS) -> str:
    """The chunk text, cut at a word boundary when it is long."""
    text = text.strip()
    if len(text) <= limit:
        return text
    cut = text[:limit].rsplit(" ", 1)[0]
    return cut + " …"


def _label(hit: StoreHit, label_key: str | None) -> str:
    return str(hit.metadata.get(label_key) if label_key else hit.source)


def distinct_sources(hits: list[StoreHit], label_key: str | None, top_k: int) -> list[StoreHit]:
    """The best chunk per source label, in score order, at most ``top_k``."""
    seen: set[str] = set()
    result = []
    for hit in hits:
        label = _label(hit, label_key)
        if label in seen:
            continue
        seen.add(label)
        result.append(hit)
        if len(result) == top_k:
            break
    return result


def fuse_by_label(
    rankings: list[list[StoreHit]], label_key: str | None, *, k: int = RRF_K,
    weights: list[float] | None = None,
) -> list[StoreHit]:
    """Reciprocal rank fusion of chunk rankings at the level of labels: each ranking counts
    a label once, at its best chunk, ``weight / (k + rank)`` (every weight 1 by default);
    the fused list holds one chunk per label (the first ranking's chunk when it has one),
    scored with the fused score."""
    best: dict[str, StoreHit] = {}
    orders: list[list[str]] = []
    for ranking in rankings:
        order = []
        for hit in ranking:
            label = _label(hit, label_key)
            if label not in order:
                order.append(label)
                best.setdefault(label, hit)
        orders.append(order)
    return [replace(best[label], score=score)
            for label, score in reciprocal_rank_fusion(orders, k=k, weights=weights)]


def resolve_strategy(strategy: DocsRetrieval, query: str,
                     store: DocumentStore) -> tuple[DocsRetrieval, list[float] | None]:
    """The ranking ``strategy`` runs for ``query``: ``adaptive`` is ``hybrid`` with the
    keyword ranking weighing :data:`ADAPTIVE_KEYWORD_WEIGHT` for a query of a
    :data:`KEYWORD_CLASSES` class on a store with keyword search, else ``vector``."""
    if strategy != "adaptive":
        return strategy, None
    if classify(query) in KEYWORD_CLASSES and isinstance(store, KeywordSearch):
        return "hybrid", [1.0, ADAPTIVE_KEYWORD_WEIGHT]
    return "vector", None


def keyword_store(store: DocumentStore) -> KeywordSearch:
    """``store`` as a keyword-search store; refuses a driver without keyword search."""
    if not isinstance(store, KeywordSearch):
        raise ConfigurationError(
            f"hybrid documentation retrieval needs keyword search, which the store "
            f"{type(store).__name__} does not offer (set RAGPLATE_DOCS_RETRIEVAL=vector)")
    return cast(KeywordSearch, store)


def ranked_labels(
    query: str,
    *,
    store: DocumentStore,
    embedder: Embedder,
    top_k: int,
    filters: SearchFilters | None,
    strategy: DocsRetrieval,
    label_key: str | None,
    keep: Callable[[StoreHit], bool] = lambda _hit: True,
    rrf_k: int = RRF_K,
) -> list[Ranked]:
    """The best ``top_k`` distinct labels that pass ``keep``, each as its chunk in the
    ranking of ``strategy``, with its similarity.

    The vector ranking is fetched ``top_k × OVERFETCH`` chunks deep (``HYBRID_DEPTH`` at
    least in hybrid mode), then twice as deep, up to :data:`MAX_DEPTH` chunks, while fewer
    labels than asked were found and the index returned every chunk asked for (it holds
    more)."""
    check_text(query, "query")
    if strategy not in STRATEGIES:
        raise ConfigurationError(f"unknown documentation retrieval {strategy!r} "
                                 f"(accepted: {', '.join(STRATEGIES)})")
    strategy, weights = resolve_strategy(strategy, query, store)
    searcher = keyword_store(store) if strategy == "hybrid" else None
    vector = embedder.embed_query(query)
    sparse = (searcher.keyword_search(query, top_k=max(HYBRID_DEPTH, top_k), filters=filters,
                                      label_key=label_key) if searcher is not None else [])
    depth = max(top_k * OVERFETCH, HYBRID_DEPTH if searcher is not None else 1)
    while True:
        dense = store.search(vector, top_k=depth, filters=filters)
        ranking = (fuse_by_label([dense, sparse], label_key, k=rrf_k, weights=weights)
                   if searcher is not None
                   else distinct_sources(dense, label_key, len(dense)))
        kept = [hit for hit in ranking if keep(hit)][:top_k]
        if len(kept) == top_k or len(dense) < depth or depth >= MAX_DEPTH:
            break
        depth = min(depth * 2, MAX_DEPTH)
    best: dict[str, float] = {}
    for hit in dense:  # the ranking's best chunk per label, so its own similarity
        best.setdefault(_label(hit, label_key), hit.score)
    return [Ranked(hit, best[_label(hit, label_key)] if _label(hit, label_key) in best
                   else _similarity(store, vector, hit, filters, label_key)) for hit in kept]


def _similarity(store: DocumentStore, vector: np.ndarray, hit: StoreHit,
                filters: SearchFilters | None, label_key: str | None) -> float:
    """The similarity of a label the vector ranking did not reach (a keyword-only hit of a
    hybrid search): its best chunk among its source's (a section-labelled user document
    holds several labels), searched under the same filters."""
    own = replace(filters or SearchFilters(), sources=(hit.source,))
    label = _label(hit, label_key)
    for found in store.search(vector, top_k=LABEL_DEPTH, filters=own):
        if _label(found, label_key) == label:
            return found.score
    return 0.0


def _floored(ranked: list[Ranked], min_score: float | None) -> list[Ranked]:
    return ranked if min_score is None else [r for r in ranked if r.similarity >= min_score]


def retrieve_developer(
    query: str,
    *,
    store: DocumentStore,
    embedder: Embedder,
    top_k: int,
    min_score: float | None = None,
    strategy: DocsRetrieval = "vector",
    rrf_k: int = RRF_K,
) -> list[Hit]:
    """Search the developer index, no access gate (not per-user data); ``min_score`` is a
    floor on each hit's similarity."""
    ranked = ranked_labels(query, store=store, embedder=embedder, top_k=clamp_top_k(top_k),
                           filters=None, strategy=strategy, label_key=None, rrf_k=rrf_k)
    return [
        Hit(
            source_label=r.hit.source,
            heading_breadcrumb=list(r.hit.metadata.get("heading_breadcrumb") or []),
            excerpt=excerpt(r.hit.text),
            text=r.hit.text,
            source=r.hit.source,
            score=r.hit.score,
            metadata=r.hit.metadata,
            similarity=r.similarity,
        )
        for r in _floored(ranked, min_score)
    ]


def user_filters(access: AccessContext) -> SearchFilters:
    """The store-side filters for an access context."""
    scopes = ("global",) if access.tenant is None else ("global", str(access.tenant))
    return SearchFilters(
        audiences=("user", "shared"),
        modules=(access.module,) if access.module else None,
        locales=(tuple(dict.fromkeys((access.locale, *access.fallback_locales)))
                 if access.locale else None),
        tenant_scopes=scopes,
        permissions=frozenset(access.permissions),
        scope_module=access.scope_module,
    )


def retrieve_user(
    query: str,
    *,
    store: DocumentStore,
    embedder: Embedder,
    access: AccessContext,
    policy: AudiencePolicy,
    top_k: int,
    min_score: float | None = None,
    strategy: DocsRetrieval = "vector",
    rrf_k: int = RRF_K,
) -> list[Hit]:
    """Filtered search over the user index, projected to the safe fields."""

    def admitted(hit: StoreHit) -> bool:
        # The store already filtered; this second check keeps a driver bug from leaking.
        return policy.allows(hit.metadata) and _visible(hit.metadata, access)

    ranked = ranked_labels(query, store=store, embedder=embedder, top_k=clamp_top_k(top_k),
                           filters=user_filters(access), strategy=strategy,
                           label_key="safe_source_label", keep=admitted, rrf_k=rrf_k)
    hits = []
    for r in _floored(ranked, min_score):
        safe = safe_projection(r.hit.metadata)
        hits.append(Hit(
            source_label=str(safe["safe_source_label"]),
            heading_breadcrumb=list(safe.get("heading_breadcrumb") or []),
            excerpt=excerpt(r.hit.text),
            text=r.hit.text,
            source=r.hit.source,
            score=r.hit.score,
            metadata=safe,
            similarity=r.similarity,
        ))
    return hits


def _visible(metadata: dict[str, Any], access: AccessContext) -> bool:
    return matches(metadata, user_filters(access))


def retrieve_with_runtime(
    runtime: Runtime,
    query: str,
    *,
    index: IndexName = "developer",
    top_k: int | None = None,
    access: AccessContext | None = None,
) -> list[Hit]:
    """:func:`retrieve_developer` or :func:`retrieve_user` wired to a runtime: the serving
    profile's store and embedder, the configured strategy, similarity floor and audience
    policy, and ``RAGPLATE_MAX_DOCUMENTS`` when ``top_k`` is not given (what the API and
    the CLI call). ``access`` is the user index's principal (none: a global one holding no
    permission)."""
    settings = runtime.settings
    k = top_k if top_k is not None else settings.max_documents
    profile = runtime.active_profile()
    store = runtime.store(index, profile)
    embedder = runtime.embedder(profile)
    if index == "user":
        return retrieve_user(query, store=store, embedder=embedder,
                             access=access or AccessContext(), policy=runtime.policy,
                             top_k=k, min_score=settings.min_similarity,
                             strategy=settings.docs_retrieval, rrf_k=settings.docs_rrf_k)
    return retrieve_developer(query, store=store, embedder=embedder, top_k=k,
                              min_score=settings.min_similarity,
                              strategy=settings.docs_retrieval, rrf_k=settings.docs_rrf_k)

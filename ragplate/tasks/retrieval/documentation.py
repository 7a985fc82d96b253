"""Developer and user documentation retrieval.

Developer retrieval is a plain vector search over the developer index. User retrieval puts
the audience, tenant, permission, locale (and module) filters inside the store query, then
re-checks the audience policy and keeps only the safe fields: a hit that fails either is
dropped (fail closed).

Both take a ``strategy`` (the ``RAGPLATE_DOCS_RETRIEVAL`` setting): ``vector`` (default) or
``hybrid``, where the store's keyword (BM25) ranking and the vector ranking are each reduced
to distinct labels and fused by reciprocal rank fusion; the user index's filters run inside
both store queries. A hybrid hit's ``score`` is its fused score.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, cast

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
from ragplate.tasks.retrieval.fusion import reciprocal_rank_fusion

if TYPE_CHECKING:
    from ragplate.infra.runtime import Runtime

EXCERPT_CHARS = 600
#: Chunks fetched per requested hit, so distinct sources can fill top-k.
OVERFETCH = 4
#: Chunks each ranking contributes to a hybrid fusion (both rankings are cheap at this depth).
HYBRID_DEPTH = 50
STRATEGIES: tuple[DocsRetrieval, ...] = ("vector", "hybrid")


@dataclass(frozen=True)
class Hit:
    """One cited result: the best chunk of one source."""

    source_label: str
    heading_breadcrumb: list[str]
    excerpt: str
    score: float
    metadata: dict[str, Any]

    def as_dict(self) -> dict[str, Any]:
        """The public shape: label, breadcrumb, excerpt, score."""
        return {
            "source_label": self.source_label,
            "heading_breadcrumb": breadcrumb_text(self.heading_breadcrumb),
            "excerpt": self.excerpt,
            "score": round(self.score, 6),
        }


def excerpt(text: str, limit: int = EXCERPT_CHARS) -> str:
    """The chunk text, cut at a word boundary when it is long."""
    text = text.strip()
    if len(text) <= limit:
        return text
    cut = text[:limit].rsplit(" ", 1)[0]
    return cut + " …"


def distinct_sources(hits: list[StoreHit], label_key: str | None, top_k: int) -> list[StoreHit]:
    """The best chunk per source label, in score order, at most ``top_k``."""
    seen: set[str] = set()
    result = []
    for hit in hits:
        label = str(hit.metadata.get(label_key) if label_key else hit.source)
        if label in seen:
            continue
        seen.add(label)
        result.append(hit)
        if len(result) == top_k:
            break
    return result


def _label(hit: StoreHit, label_key: str | None) -> str:
    return str(hit.metadata.get(label_key) if label_key else hit.source)


def fuse_by_label(
    rankings: list[list[StoreHit]], label_key: str | None
) -> list[StoreHit]:
    """Reciprocal rank fusion of chunk rankings at the level of labels: each ranking counts
    a label once, at its best chunk; the fused list holds one chunk per label (the first
    ranking's chunk when it has one), scored with the fused score."""
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
            for label, score in reciprocal_rank_fusion(orders)]


def keyword_store(store: DocumentStore) -> KeywordSearch:
    """``store`` as a keyword-search store; refuses a driver without keyword search."""
    if not isinstance(store, KeywordSearch):
        raise ConfigurationError(
            f"hybrid documentation retrieval needs keyword search, which the store "
            f"{type(store).__name__} does not offer (set RAGPLATE_DOCS_RETRIEVAL=vector)")
    return cast(KeywordSearch, store)


def _candidates(
    query: str,
    *,
    store: DocumentStore,
    embedder: Embedder,
    depth: int,
    filters: SearchFilters | None,
    min_score: float | None,
    strategy: DocsRetrieval,
    label_key: str | None,
) -> list[StoreHit]:
    """Chunks in rank order: the vector ranking, or (hybrid) the fused ranking."""
    check_text(query, "query")
    if strategy not in STRATEGIES:
        raise ConfigurationError(f"unknown documentation retrieval {strategy!r} "
                                 f"(accepted: {', '.join(STRATEGIES)})")
    searcher = keyword_store(store) if strategy == "hybrid" else None
    vector = embedder.embed_query(query)
    if searcher is None:
        return store.search(vector, top_k=depth, filters=filters, min_score=min_score)
    dense = store.search(vector, top_k=HYBRID_DEPTH, filters=filters, min_score=min_score)
    sparse = searcher.keyword_search(query, top_k=HYBRID_DEPTH, filters=filters,
                                     label_key=label_key)
    return fuse_by_label([dense, sparse], label_key)


def retrieve_developer(
    query: str,
    *,
    store: DocumentStore,
    embedder: Embedder,
    top_k: int,
    min_score: float | None = None,
    strategy: DocsRetrieval = "vector",
) -> list[Hit]:
    """Search the developer index, no access gate (not per-user data). ``min_score`` is a
    floor on vector similarity (in hybrid mode it filters the vector ranking only)."""
    k = clamp_top_k(top_k)
    raw = _candidates(query, store=store, embedder=embedder, depth=k * OVERFETCH,
                      filters=None, min_score=min_score, strategy=strategy, label_key=None)
    return [
        Hit(
            source_label=h.source,
            heading_breadcrumb=list(h.metadata.get("heading_breadcrumb") or []),
            excerpt=excerpt(h.text),
            score=h.score,
            metadata=h.metadata,
        )
        for h in distinct_sources(raw, None, k)
    ]


def user_filters(access: AccessContext) -> SearchFilters:
    """The store-side filters for an access context."""
    scopes = ("global",) if access.tenant is None else ("global", str(access.tenant))
    return SearchFilters(
        audiences=("user", "shared"),
        modules=(access.module,) if access.module else None,
        locales=(access.locale,) if access.locale else None,
        tenant_scopes=scopes,
        permissions=frozenset(access.permissions),
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
) -> list[Hit]:
    """Filtered search over the user index, projected to the safe fields."""
    k = clamp_top_k(top_k)
    raw = _candidates(query, store=store, embedder=embedder, depth=k * OVERFETCH,
                      filters=user_filters(access), min_score=min_score, strategy=strategy,
                      label_key="safe_source_label")
    hits = []
    for h in distinct_sources(raw, "safe_source_label", k * OVERFETCH):
        # The store already filtered; this second check keeps a driver bug from leaking.
        if not policy.allows(h.metadata) or not _visible(h.metadata, access):
            continue
        safe = safe_projection(h.metadata)
        hits.append(
            Hit(
                source_label=str(safe["safe_source_label"]),
                heading_breadcrumb=list(safe.get("heading_breadcrumb") or []),
                excerpt=excerpt(h.text),
                score=h.score,
                metadata=safe,
            )
        )
        if len(hits) == k:
            break
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
                             strategy=settings.docs_retrieval)
    return retrieve_developer(query, store=store, embedder=embedder, top_k=k,
                              min_score=settings.min_similarity,
                              strategy=settings.docs_retrieval)

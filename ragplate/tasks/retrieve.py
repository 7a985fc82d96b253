"""Developer and user documentation retrieval.

Developer retrieval is a plain vector search over the developer index. User retrieval puts
the audience, tenant, permission, locale (and module) filters inside the store query, then
re-checks the audience policy and keeps only the safe fields: a hit that fails either is
dropped (fail closed).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ragplate.catalog.documents import (
    AccessContext,
    AudiencePolicy,
    breadcrumb_text,
    safe_projection,
)
from ragplate.catalog.settings import clamp_top_k
from ragplate.infra.embedders.base import Embedder
from ragplate.infra.stores.base import DocumentStore, SearchFilters, StoreHit

EXCERPT_CHARS = 600
#: Chunks fetched per requested hit, so distinct sources can fill top-k.
OVERFETCH = 4


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


def retrieve_developer(
    query: str,
    *,
    store: DocumentStore,
    embedder: Embedder,
    top_k: int,
    min_score: float | None = None,
) -> list[Hit]:
    """Vector search over the developer index, no access gate (not per-user data)."""
    k = clamp_top_k(top_k)
    vector = embedder.embed_query(query)
    raw = store.search(vector, top_k=k * OVERFETCH, min_score=min_score)
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
) -> list[Hit]:
    """Filtered vector search over the user index, projected to the safe fields."""
    k = clamp_top_k(top_k)
    vector = embedder.embed_query(query)
    raw = store.search(vector, top_k=k * OVERFETCH, filters=user_filters(access),
                       min_score=min_score)
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
    from ragplate.infra.stores.base import matches

    return matches(metadata, user_filters(access))

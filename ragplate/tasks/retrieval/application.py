"""Application search over embeddable records: keyword, vector, hybrid, reranked.

A request asks for a mode and :func:`resolve_strategy` decides what it may spend:

| mode | runs |
|---|---|
| ``fast`` | keyword search only (full-text or BM25); no embedding class is ever built |
| ``balanced`` | keyword + vector (the serving model) fused by reciprocal rank fusion (hybrid) |
| ``deep`` | balanced, then the configured cross-encoder reranks the fused top |

With ``RAGPLATE_SEARCH_ADAPTIVE_TUNING`` on, balanced and deep fuse the keyword, vector
and hybrid orderings with the retrieval tuning profile instead (weighted scores + RRF +
agreement, :mod:`ragplate.tasks.retrieval.fusion`). Every result keeps each strategy's ordering
and scores (``per_strategy``), which the retrieval evaluations and tuning replay.

Whatever prevents the requested mode is served by a cheaper one and named in
``meta.search.degraded_reason``; a search never fails because a model is unavailable:

| reason | cause | served as |
|---|---|---|
| ``embedder_unavailable`` | the serving model's embedder cannot be built | ``fast`` |
| ``no_vectors`` | no record of the entity has a vector of the serving model | ``fast`` |
| ``embedder_failed`` | embedding the query raised | ``fast`` |
| ``nothing_to_embed`` | the query only excludes words (``-word``): nothing is wanted | ``fast`` |
| ``reranker_unavailable`` | ``deep`` without a configured (or buildable) reranker | ``balanced`` |
| ``reranker_failed`` | the rerank call raised | ``balanced`` |

Only published records of the entity, of tenant ``global`` or the caller's tenant, with a
translation in the requested locale are returned, in that locale. Keyword search matches
that locale's text; vector search compares the query with every locale's vector (vectors
carry no language) and returns the requested translation.
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np
from sqlalchemy.engine import Engine

from ragplate.catalog.entities import Entity, get_entity
from ragplate.catalog.errors import ActiveProfileError
from ragplate.catalog.people import check_locale, check_tenant
from ragplate.catalog.profiles import EmbeddingProfile
from ragplate.catalog.text import check_text
from ragplate.infra.records.engines import PostgresRecordSearch, RecordSearch
from ragplate.infra.records.search import RecordHit, explain_vector_hits
from ragplate.infra.records.sql import split_negations
from ragplate.tasks.records.texts import compose_text
from ragplate.tasks.retrieval.documentation import excerpt
from ragplate.tasks.retrieval.fusion import RRF_K, reciprocal_rank_fusion, tuned_fusion
from ragplate.tasks.retrieval.strategy import (
    EmbedderFactory,
    Mode,
    Reranker,
    RerankerFactory,
    configured_reranker,
    degrade,
    resolve_strategy,
)

if TYPE_CHECKING:
    from ragplate.catalog.settings import Settings
    from ragplate.infra.runtime import Runtime

log = logging.getLogger(__name__)

EXCERPT_CHARS = 300
#: How many fused hits the reranker scores, and how much its score weighs in the blend.
RERANK_TOP_K = 30
RERANK_BLEND = 0.6
#: Vector rows fetched per wanted record (a record has one vector per locale).
VECTOR_ROWS_PER_HIT = 3


@dataclass(frozen=True)
class AppHit:
    """One record in the requested locale."""

    id: str
    title: str
    excerpt: str
    score: float
    locale: str
    #: The cosine of the record's best vector to the query; ``None`` in fast mode (no query
    #: vector) and for a record without a vector of the serving model.
    similarity: float | None = None


@dataclass(frozen=True)
class SearchMeta:
    """``meta.search`` of an answer."""

    mode_requested: Mode
    mode: Mode
    degraded_reason: str | None
    model_key: str | None
    strategies: list[str]
    reranked: bool = False


@dataclass(frozen=True)
class AppSearchResult:
    """Hits, best first, and how they were obtained."""

    hits: list[AppHit]
    meta: SearchMeta
    per_strategy: dict[str, list[str]] = field(default_factory=dict)
    #: The score of each id of ``per_strategy`` (same order): what rank fusion and the
    #: retrieval evaluations replay.
    per_strategy_scores: dict[str, list[float]] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """The public shape: ``{"hits": [...], "meta": {"search": {...}}}``."""
        return {"hits": [asdict(h) for h in self.hits], "meta": {"search": asdict(self.meta)}}


def tenant_scope(tenant: str | None) -> list[str]:
    """Tenants whose records a caller sees: ``global``, plus its own."""
    return ["global"] if tenant in (None, "", "global") else ["global", str(tenant)]


def _keyword(records: RecordSearch, entity: Entity, query: str, locale: str,
             tenants: list[str], limit: int) -> dict[str, RecordHit]:
    hits = records.keyword_hits(entity, query=query, locale=locale, tenants=tenants,
                                limit=limit)
    return {hit.record_key: hit for hit in hits}


def _candidates(top_k: int) -> int:
    """Hits each strategy contributes to the fusion and the rerank."""
    return max(RERANK_TOP_K, 3 * top_k)


def _vector(records: RecordSearch, entity: Entity, profile: EmbeddingProfile,
            vector: np.ndarray, locale: str, tenants: list[str],
            limit: int, excluded: str = "") -> dict[str, RecordHit]:
    # A record has one vector per locale: fetch more rows, keep each record's best.
    best: dict[str, RecordHit] = {}
    for hit in records.vector_hits(entity, profile=profile, vector=vector, locale=locale,
                                   tenants=tenants, limit=limit * VECTOR_ROWS_PER_HIT,
                                   excluded=excluded):
        if hit.record_key not in best or hit.score > best[hit.record_key].score:
            best[hit.record_key] = hit
    # relaxed_order may return rows slightly out of order: rank exactly.
    ranked = sorted(best.items(), key=lambda kv: -kv[1].score)[:limit]
    return dict(ranked)


def search_records(
    engine: Engine,
    *,
    entity: str,
    query: str,
    mode: Mode,
    locale: str,
    serving: EmbeddingProfile | None,
    embedder_factory: EmbedderFactory | None,
    reranker_factory: RerankerFactory | None = None,
    tenant: str | None = None,
    top_k: int = 10,
    settings: Settings,
    records: RecordSearch | None = None,
) -> AppSearchResult:
    """Search ``entity`` for ``query`` in ``mode``; an unknown entity raises
    :class:`~ragplate.catalog.errors.UnknownEntityError`. ``serving`` is the profile whose
    vectors are searched (``None``: it cannot be resolved, so keyword search answers);
    ``embedder_factory`` builds its embedder (only for balanced and deep),
    ``reranker_factory`` the reranker (deep; ``None``: none configured); ``records`` the
    engine that ranks (default: PostgreSQL through ``engine``)."""
    check_text(query, "query")
    check_locale(locale)
    if tenant is not None:
        check_text(tenant, "tenant", blank_ok=True)
        if tenant:
            # A tenant no person can belong to would search only 'global' in silence.
            check_tenant(tenant)
    ent = get_entity(entity, settings)
    # "-word" excludes in every strategy, not in the keyword one alone: the vectors look for
    # what is wanted, and the engine leaves out what is excluded as its keyword search
    # does, before the limit. A query of exclusions alone wants nothing: no model is built.
    wanted, excluded = split_negations(query)
    nothing_wanted = not wanted.strip()
    strategy = resolve_strategy(
        mode, embedder_factory=None if serving is None or nothing_wanted else embedder_factory,
        reranker_factory=None if nothing_wanted else reranker_factory)
    if nothing_wanted and mode != "fast":
        strategy = degrade(strategy, "fast", "nothing_to_embed")
    tenants = tenant_scope(tenant)
    limit = _candidates(top_k)
    ranker = records if records is not None else PostgresRecordSearch(engine)
    if (strategy.embedder is not None and serving is not None
            and not ranker.has_vectors(ent, serving.key)):
        strategy = degrade(strategy, "fast", "no_vectors")
    keyword = _keyword(ranker, ent, query, locale, tenants, limit)
    vectors: dict[str, RecordHit] | None = None
    vector: np.ndarray | None = None
    if strategy.embedder is not None and serving is not None:
        try:
            vector = strategy.embedder.embed_query(wanted)
        except Exception as exc:
            log.warning("query embedding failed (%s); serving keyword search",
                        exc.__class__.__name__)
            strategy = degrade(strategy, "fast", "embedder_failed")
        else:
            vectors = _vector(ranker, ent, serving, vector, locale, tenants, limit,
                              excluded)
    similarity: dict[str, float] = {}
    if vectors is not None and vector is not None and serving is not None:
        similarity = {k: v.score for k, v in vectors.items()}
        # Keyword-only candidates: their own similarity, so every hit has one.
        others = [k for k in keyword if k not in similarity]
        similarity.update(ranker.similarities(ent, profile=serving, vector=vector,
                                              keys=others))
    per_strategy = {"keyword": list(keyword)}
    scores = {"keyword": [c.score for c in keyword.values()]}
    pool = dict(keyword)
    if vectors is None:
        ranked = [(k, c.score) for k, c in keyword.items()]
    else:
        per_strategy["vector"] = list(vectors)
        scores["vector"] = [c.score for c in vectors.values()]
        pool.update({k: v for k, v in vectors.items() if k not in pool})
        ranked = reciprocal_rank_fusion([list(keyword), list(vectors)], k=RRF_K)
        per_strategy["hybrid"] = [k for k, _ in ranked]
        scores["hybrid"] = [score for _, score in ranked]
        if settings.search_adaptive_tuning:
            ranked = tuned_fusion(query, per_strategy, scores)
    reranked = False
    if strategy.reranker is not None and ranked:
        try:
            ranked = _rerank(strategy.reranker, query, ranked, pool, max(RERANK_TOP_K, top_k))
            reranked = True
        except Exception as exc:
            log.warning("reranker failed (%s); returning fused results", exc.__class__.__name__)
            strategy = degrade(strategy, "balanced", "reranker_failed")
    hits = [AppHit(id=k, title=pool[k].title, excerpt=excerpt(pool[k].body, EXCERPT_CHARS),
                   score=round(score, 6), locale=pool[k].locale,
                   similarity=round(similarity[k], 6) if k in similarity else None)
            for k, score in ranked[:top_k]]
    meta = SearchMeta(mode_requested=strategy.mode_requested, mode=strategy.mode,
                      degraded_reason=strategy.degraded_reason,
                      model_key=serving.key if vectors is not None and serving else None,
                      strategies=list(per_strategy), reranked=reranked)
    return AppSearchResult(hits, meta, per_strategy, scores)


def _rerank(reranker: Reranker, query: str, ranked: list[tuple[str, float]],
            pool: dict[str, RecordHit], depth: int) -> list[tuple[str, float]]:
    """Blend the reranker's score into the fused top ``depth`` (rescaled onto the fused
    range, as the spec's ``rerank_blend``); the rest keeps its fused order below."""
    head, tail = ranked[:depth], ranked[depth:]
    texts = [compose_text((pool[k].title, pool[k].body)) for k, _ in head]
    scores = reranker.rerank(query, texts).scores
    if len(scores) != len(head):
        raise ValueError(f"reranker scored {len(scores)} of {len(head)} texts")
    top = max(score for _, score in head)
    blended = [(k, score * (1 - RERANK_BLEND) + float(s) * top * RERANK_BLEND)
               for (k, score), s in zip(head, scores, strict=True)]
    return sorted(blended, key=lambda kv: -kv[1]) + tail


def explain_vector_search(
    engine: Engine,
    *,
    entity: str,
    profile: EmbeddingProfile,
    vector: np.ndarray,
    locale: str,
    settings: Settings,
    tenant: str | None = None,
    top_k: int = 10,
) -> str:
    """The PostgreSQL plan of the vector query a search for ``top_k`` hits runs (for
    diagnosis and tests)."""
    with engine.begin() as conn:
        return explain_vector_hits(conn, get_entity(entity, settings), profile=profile,
                                   vector=vector, locale=locale, tenants=tenant_scope(tenant),
                                   limit=_candidates(top_k) * VECTOR_ROWS_PER_HIT)


def search_with_runtime(
    runtime: Runtime,
    *,
    entity: str,
    query: str,
    mode: Mode,
    locale: str,
    tenant: str | None = None,
    top_k: int = 10,
) -> AppSearchResult:
    """:func:`search_records` wired to a runtime: its serving profile, embedder and the
    configured reranker (what the API and the CLI call).

    Keyword search needs no model, so a serving profile that cannot be resolved (say, one
    no longer declared) degrades the search to keyword (``embedder_unavailable``) instead
    of refusing it; ``/health`` reports the cause."""
    serving: EmbeddingProfile | None
    try:
        serving = runtime.active_profile()
    except ActiveProfileError as exc:
        log.warning("serving profile unavailable (%s); serving keyword search", exc)
        serving = None
    return search_records(
        runtime.engine, entity=entity, query=query, mode=mode, locale=locale, tenant=tenant,
        top_k=top_k, serving=serving,
        embedder_factory=None if serving is None else partial(runtime.embedder, serving),
        reranker_factory=configured_reranker(runtime.settings), settings=runtime.settings,
        records=runtime.record_search,
    )

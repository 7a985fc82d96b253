"""Application search: keyword, vector, hybrid, reranked, and every degradation."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import pytest
import sqlalchemy as sa

from ragplate.catalog.errors import ProviderUnavailableError, UnknownEntityError
from ragplate.catalog.profiles import EmbeddingProfile, get_profile
from ragplate.catalog.settings import ServerSettings, Settings
from ragplate.infra.models.base import Embedder
from ragplate.infra.records.vectors import (
    VectorRow,
    ensure_model_index,
    model_index_name,
    write_vectors,
)
from ragplate.tasks.records.texts import compose_text
from ragplate.tasks.retrieval.application import (
    AppSearchResult,
    explain_vector_search,
    search_records,
)
from ragplate.tasks.retrieval.fusion import reciprocal_rank_fusion
from ragplate.tasks.retrieval.strategy import (
    EmbedderFactory,
    Mode,
    RerankerFactory,
    configured_reranker,
    resolve_strategy,
)
from tests.testing.http_double import HttpDouble, Reply
from tests.testing.records import CORPUS, CachingEmbedder, load_corpus
from tests.testing.server_doubles import overlap_score, tei_double

pytestmark = pytest.mark.integration

ENTITY = "cms.contents"
MONEY_BACK = "how do I get my money back"
#: "warehouse stocktake": words are OR-ed, so the record holding both ranks first and the
#: refund policy (its parcel "reaches our warehouse") follows.
WAREHOUSE = ["stocktake", "refund"]


@pytest.fixture(scope="module")
def keys(engine: sa.Engine, embedder: Embedder) -> dict[str, int]:
    return load_corpus(engine, CachingEmbedder(embedder))


@pytest.fixture
def caching(embedder: Embedder) -> CachingEmbedder:
    return CachingEmbedder(embedder)


def never_built() -> Embedder:
    raise AssertionError("fast search must not build an embedder")


def search(
    engine: sa.Engine,
    query: str,
    mode: Mode,
    *,
    embedder_factory: EmbedderFactory | None,
    locale: str = "en",
    tenant: str | None = None,
    reranker_factory: RerankerFactory | None = None,
    serving: EmbeddingProfile | None = None,
    top_k: int = 10,
) -> AppSearchResult:
    profile = serving or get_profile("local:intfloat/multilingual-e5-small")
    return search_records(engine, entity=ENTITY, query=query, mode=mode, locale=locale,
                          tenant=tenant, top_k=top_k, serving=profile,
                          embedder_factory=embedder_factory, reranker_factory=reranker_factory,
                          settings=Settings())


def names(result: AppSearchResult, keys: dict[str, int]) -> list[str]:
    by_key = {str(v): k for k, v in keys.items()}
    return [by_key[h.id] for h in result.hits]


def test_fast_is_keyword_only_and_never_builds_an_embedder(
    engine: sa.Engine, keys: dict[str, int]
) -> None:
    result = search(engine, "warehouse stocktake", "fast", embedder_factory=never_built,
                    reranker_factory=lambda: never_built())  # type: ignore[arg-type,return-value]

    assert names(result, keys) == WAREHOUSE
    assert result.hits[0].score > result.hits[1].score
    hit = result.hits[0]
    assert (hit.title, hit.locale) == ("Warehouse inventory", "en")
    assert hit.excerpt.startswith("Once a quarter the warehouse runs a stocktake")
    assert hit.score > 0
    assert hit.similarity is None  # no query vector in fast mode
    meta = result.meta
    assert (meta.mode_requested, meta.mode, meta.degraded_reason) == ("fast", "fast", None)
    assert (meta.model_key, meta.strategies, meta.reranked) == (None, ["keyword"], False)


def test_the_resolver_builds_only_what_a_mode_needs() -> None:
    fast = resolve_strategy("fast", embedder_factory=never_built,
                            reranker_factory=lambda: never_built())  # type: ignore[arg-type,return-value]
    assert (fast.mode, fast.embedder, fast.reranker, fast.degraded_reason) == (
        "fast", None, None, None)
    with pytest.raises(ValueError, match="unknown search mode 'turbo'"):
        resolve_strategy("turbo", embedder_factory=None)  # type: ignore[arg-type]


def test_keyword_search_stems_in_the_locale_language_and_weighs_titles(
    engine: sa.Engine, keys: dict[str, int]
) -> None:
    # "tracking" is in the title of one record and in the body of another.
    tracking = search(engine, "tracking", "fast", embedder_factory=never_built)
    stemmed = search(engine, "quarterly stocktakes", "fast", embedder_factory=never_built)

    assert names(tracking, keys) == ["tracking", "islands"]
    assert tracking.hits[0].score > tracking.hits[1].score
    assert names(stemmed, keys) == ["stocktake"]  # English stems: quarterly ~ quarter


def test_a_word_after_a_minus_excludes_the_records_holding_it(
    engine: sa.Engine, keys: dict[str, int]
) -> None:
    from ragplate.infra.records.sql import split_negations

    assert split_negations('stock "gift cards" -"credit note" -x') == (
        "stock  gift cards     ", "credit note x")
    excluded = search(engine, "warehouse stocktake -refunds", "fast",
                      embedder_factory=never_built)
    assert names(excluded, keys) == ["stocktake"]  # "refunds" ~ "refund": stemmed too
    assert search(engine, '"warehouse" -"parcel reaches"', "fast",
                  embedder_factory=never_built).hits[0].id == str(keys["stocktake"])
    assert search(engine, "-warehouse", "fast", embedder_factory=never_built).hits == []


def test_an_excluded_word_excludes_in_every_mode_and_exclusions_alone_find_nothing(
    engine: sa.Engine, keys: dict[str, int], caching: CachingEmbedder
) -> None:
    # The vectors of "-warehouse" are near the warehouse record: they must not bring back
    # what the keyword search excludes.
    for mode in ("balanced", "deep"):
        built: list[str] = []  # no model is built for it

        def embedder(built: list[str] = built) -> CachingEmbedder:
            built.append("embedder")
            return caching

        def reranker(built: list[str] = built) -> None:
            built.append("reranker")

        alone = search(engine, "-warehouse", mode, embedder_factory=embedder,
                       reranker_factory=reranker)  # type: ignore[arg-type]
        assert alone.hits == [] and built == []
        # Nothing was left to embed, and the answer says so instead of passing for balanced.
        assert (alone.meta.mode, alone.meta.degraded_reason) == ("fast", "nothing_to_embed")
        assert alone.meta.strategies == ["keyword"] and alone.meta.model_key is None
        kept = search(engine, "warehouse stocktake -refunds", mode,
                      embedder_factory=lambda: caching)
        assert kept.hits and "refund" not in names(kept, keys)
        assert "stocktake" in names(kept, keys)
        texts = " ".join(f"{h.title} {h.excerpt}".lower() for h in kept.hits)
        assert "refund" not in texts


def test_an_italian_question_finds_the_italian_translation_by_its_stem(
    engine: sa.Engine, keys: dict[str, int]
) -> None:
    # "rimborsi" and "rimborso" share the Italian stem; "festivita" is "festività" unaccented.
    refund = search(engine, "come funzionano i rimborsi", "fast", locale="it",
                    embedder_factory=never_built)
    holidays = search(engine, "orari nei giorni festivita", "fast", locale="it",
                      embedder_factory=never_built)

    assert names(refund, keys) == ["refund"]
    assert (refund.hits[0].title, refund.hits[0].locale) == ("Politica di rimborso", "it")
    assert names(holidays, keys)[0] == "holidays"
    # Read as English, the Italian word is no English stem of the English texts.
    assert search(engine, "rimborsi", "fast", embedder_factory=never_built).hits == []


def test_a_paraphrase_is_found_by_vectors_only(
    engine: sa.Engine, keys: dict[str, int], caching: CachingEmbedder
) -> None:
    fast = search(engine, MONEY_BACK, "fast", embedder_factory=never_built)
    balanced = search(engine, MONEY_BACK, "balanced", embedder_factory=lambda: caching)

    assert fast.hits == []
    assert names(balanced, keys)[0] == "refund"
    # Every hit has its own cosine, the keyword-only ones too, on one scale.
    similarities = [h.similarity for h in balanced.hits]
    assert all(s is not None and -1.0 <= s <= 1.0 for s in similarities)
    assert balanced.hits[0].similarity == max(similarities)  # type: ignore[type-var]
    meta = balanced.meta
    assert (meta.mode, meta.degraded_reason) == ("balanced", None)
    assert meta.model_key == caching.profile.key
    assert meta.strategies == ["keyword", "vector", "hybrid"]
    assert caching.queries == [MONEY_BACK]


def test_hybrid_is_reciprocal_rank_fusion_of_keyword_and_vector(
    engine: sa.Engine, keys: dict[str, int], caching: CachingEmbedder
) -> None:
    result = search(engine, "password reset link", "balanced", embedder_factory=lambda: caching)

    keyword, vector = result.per_strategy["keyword"], result.per_strategy["vector"]
    assert keyword[0] == vector[0] == str(keys["password"])
    assert names(result, keys)[0] == "password"
    assert result.hits[0].score == pytest.approx(2 / 61, abs=1e-6)  # first in both lists
    fused = reciprocal_rank_fusion([keyword, vector], k=60)
    assert [h.id for h in result.hits] == [k for k, _ in fused][:10]


def test_rrf_sums_reciprocal_ranks_and_breaks_ties_by_best_rank() -> None:
    fused = reciprocal_rank_fusion([["a", "b", "c"], ["c", "d"]], k=60)

    assert [k for k, _ in fused] == ["c", "a", "b", "d"]  # b and d tie: b came first
    assert dict(fused)["c"] == pytest.approx(1 / 63 + 1 / 61)
    assert dict(fused)["a"] == pytest.approx(1 / 61)


def test_deep_without_a_reranker_is_served_as_balanced(
    engine: sa.Engine, keys: dict[str, int], caching: CachingEmbedder
) -> None:
    deep = search(engine, MONEY_BACK, "deep", embedder_factory=lambda: caching)
    balanced = search(engine, MONEY_BACK, "balanced", embedder_factory=lambda: caching)

    meta = deep.meta
    assert (meta.mode_requested, meta.mode) == ("deep", "balanced")
    assert meta.degraded_reason == "reranker_unavailable"
    assert meta.reranked is False
    assert deep.hits == balanced.hits


def test_deep_reranks_the_fused_hits_with_the_rerank_server(
    engine: sa.Engine, keys: dict[str, int], caching: CachingEmbedder
) -> None:
    query = "parcel delivery by courier"
    with tei_double() as tei:
        reranker = configured_reranker(
            Settings(servers={"rerank": ServerSettings(url=tei.url, api="tei")}))
        assert reranker is not None
        result = search(engine, query, "deep", embedder_factory=lambda: caching,
                        reranker_factory=reranker)
        sent = tei.requests_to("/rerank")

    meta = result.meta
    assert (meta.mode, meta.degraded_reason, meta.reranked) == ("deep", None, True)
    assert len(sent) == 1 and sent[0].json()["query"] == query
    # The blend of the spec: 0.4 × fused + 0.6 × rerank score rescaled to the fused top.
    fused = reciprocal_rank_fusion([result.per_strategy["keyword"],
                                    result.per_strategy["vector"]])
    texts = {str(keys[n]): compose_text(CORPUS[n].translations["en"]) for n in CORPUS
             if "en" in CORPUS[n].translations}
    top = fused[0][1]
    expected = sorted(((k, s * 0.4 + overlap_score(query, texts[k]) * top * 0.6)
                       for k, s in fused), key=lambda kv: -kv[1])
    assert [h.id for h in result.hits] == [k for k, _ in expected][:10]


def test_a_failing_reranker_leaves_the_fused_order(
    engine: sa.Engine, keys: dict[str, int], caching: CachingEmbedder
) -> None:
    down = HttpDouble({("POST", "/rerank"): lambda _: Reply(500, {"error": "model crashed"})})
    with down:
        reranker = configured_reranker(Settings(servers={"rerank": ServerSettings(url=down.url)}))
        result = search(engine, MONEY_BACK, "deep", embedder_factory=lambda: caching,
                        reranker_factory=reranker)
    balanced = search(engine, MONEY_BACK, "balanced", embedder_factory=lambda: caching)

    assert (result.meta.mode, result.meta.degraded_reason) == ("balanced", "reranker_failed")
    assert result.meta.reranked is False
    assert result.hits == balanced.hits


def test_an_embedder_that_cannot_be_built_degrades_to_keywords(
    engine: sa.Engine, keys: dict[str, int]
) -> None:
    def broken() -> Embedder:
        raise ProviderUnavailableError("embeddings server is down")

    result = search(engine, "warehouse stocktake", "balanced", embedder_factory=broken)

    assert names(result, keys) == WAREHOUSE
    meta = result.meta
    assert (meta.mode_requested, meta.mode) == ("balanced", "fast")
    assert (meta.degraded_reason, meta.strategies, meta.model_key) == (
        "embedder_unavailable", ["keyword"], None)


class FailingQueries(CachingEmbedder):
    def embed_query(self, text: str) -> np.ndarray:
        raise ProviderUnavailableError("[request_id 0] embeddings call failed: timeout")


def test_an_embedder_that_fails_on_the_query_degrades_to_keywords(
    engine: sa.Engine, keys: dict[str, int], embedder: Embedder
) -> None:
    result = search(engine, "warehouse stocktake", "deep",
                    embedder_factory=lambda: FailingQueries(embedder))

    assert names(result, keys) == WAREHOUSE
    assert (result.meta.mode, result.meta.degraded_reason) == ("fast", "embedder_failed")


def test_a_model_without_vectors_degrades_to_keywords_without_embedding(
    engine: sa.Engine, keys: dict[str, int], embedder: Embedder
) -> None:
    portuguese = get_profile("local:cnmoro/portuguese-multilingual-e5-small")
    counting = CachingEmbedder(embedder)

    result = search(engine, "warehouse stocktake", "balanced", serving=portuguese,
                    embedder_factory=lambda: counting)

    assert (result.meta.mode, result.meta.degraded_reason) == ("fast", "no_vectors")
    assert names(result, keys) == WAREHOUSE
    assert counting.queries == []  # the guard runs before the query is embedded


@pytest.mark.parametrize("mode", ["fast", "balanced"])
def test_a_tenant_sees_global_records_and_its_own(
    engine: sa.Engine, keys: dict[str, int], caching: CachingEmbedder, mode: Mode
) -> None:
    def found(tenant: str | None) -> set[str]:
        result = search(engine, "employee discount", mode, tenant=tenant,
                        embedder_factory=lambda: caching)
        return set(names(result, keys))

    assert "acme_discount" in found("acme") and "globex_discount" not in found("acme")
    assert "globex_discount" in found("globex") and "acme_discount" not in found("globex")
    assert found(None).isdisjoint({"acme_discount", "globex_discount"})
    assert found("global") == found(None)


def test_results_come_in_the_requested_locale_only(
    engine: sa.Engine, keys: dict[str, int], caching: CachingEmbedder
) -> None:
    italian = search(engine, "Refund policy", "balanced", locale="it",
                     embedder_factory=lambda: caching)
    english = search(engine, "consegna al piano dei mobili", "balanced", locale="en",
                     embedder_factory=lambda: caching)
    floor = search(engine, "consegna al piano", "fast", locale="it",
                   embedder_factory=never_built)

    # The English vector of the refund finds it; the Italian translation is returned.
    assert names(italian, keys)[0] == "refund"
    assert (italian.hits[0].title, italian.hits[0].locale) == ("Politica di rimborso", "it")
    assert all(h.locale == "it" for h in italian.hits)
    assert set(names(italian, keys)) <= {n for n, r in CORPUS.items() if "it" in r.translations}
    assert "floor_delivery" not in names(english, keys)  # it has no English translation
    assert names(floor, keys) == ["floor_delivery"]


@pytest.mark.parametrize("mode", ["fast", "balanced"])
def test_drafts_and_archived_records_are_never_found(
    engine: sa.Engine, keys: dict[str, int], caching: CachingEmbedder, mode: Mode
) -> None:
    for query in ("summer sale garden furniture barbecues", "old shipping rates islands"):
        result = search(engine, query, mode, embedder_factory=lambda: caching, top_k=50)
        assert {"summer_sale", "old_rates"}.isdisjoint(names(result, keys))


def test_an_unknown_entity_is_named(engine: sa.Engine) -> None:
    with pytest.raises(UnknownEntityError, match=r"unknown entity 'cms\.pages'"):
        search_records(engine, entity="cms.pages", query="x", mode="fast", locale="en",
                       serving=get_profile("local:intfloat/multilingual-e5-small"),
                       embedder_factory=never_built, settings=Settings())


# Few dimensions keep the index build cheap; the planner's costs do not depend on them.
@dataclass
class FixedQuery:
    """Embeds every query as the same vector (the random vectors have no text)."""

    profile: EmbeddingProfile
    vector: np.ndarray

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        raise AssertionError("a search embeds no passage")

    def embed_query(self, text: str) -> np.ndarray:
        return self.vector


EXPLAIN = EmbeddingProfile(key="local:test/explain", dimensions=16, local_variant="original")
EIGHT = EmbeddingProfile(key="local:test/eight", dimensions=8, local_variant="original")


@pytest.fixture
def many_vectors(engine: sa.Engine, keys: dict[str, int]) -> Iterator[list[int]]:
    """10,000 published records of tenant 'explain' with random vectors of a 16-dimension
    model, plus rows of an 8-dimension model beside them (as during a switch). Fewer rows
    and the planner rightly prefers a sequential scan: a search fetches 90 vector rows."""
    rng = np.random.default_rng(7)
    with engine.begin() as conn:
        ids = conn.execute(sa.text(
            "INSERT INTO cms_contents (tenant, status) SELECT 'explain', 'published' "
            "FROM generate_series(1, 10000) RETURNING id")).scalars().all()
        conn.execute(sa.text(
            "INSERT INTO cms_content_translations (content_id, locale, title, body) "
            "SELECT id, 'en', 'Record ' || id, 'Body of record ' || id "
            "FROM unnest(CAST(:ids AS bigint[])) AS id"), {"ids": list(ids)})
        for profile, some in ((EXPLAIN, ids), (EIGHT, ids[:1000])):
            vectors = rng.standard_normal((len(some), profile.dimensions)).astype(np.float32)
            rows = [VectorRow(str(k), "en", "h", v / np.linalg.norm(v))
                    for k, v in zip(some, vectors, strict=True)]
            write_vectors(conn, entity=ENTITY, profile=profile, rows=rows)
            ensure_model_index(conn, profile)
        for table in ("cms_contents", "cms_content_translations", "model_embeddings"):
            conn.execute(sa.text(f"ANALYZE {table}"))  # as autovacuum would
    yield list(ids)
    with engine.begin() as conn:
        conn.execute(sa.text("DELETE FROM model_embeddings WHERE model_key LIKE 'local:test/%'"))
        conn.execute(sa.text("DELETE FROM cms_contents WHERE tenant = 'explain'"))
        for profile in (EXPLAIN, EIGHT):
            conn.execute(sa.text(f"DROP INDEX IF EXISTS {model_index_name(profile.key)}"))


def test_vector_search_uses_the_serving_models_hnsw_index(
    engine: sa.Engine, many_vectors: list[int]
) -> None:
    query = np.ones(16, dtype=np.float32) / 4
    plan = explain_vector_search(engine, entity=ENTITY, profile=EXPLAIN, vector=query,
                                 locale="en", tenant="explain", settings=Settings())

    assert f"Index Scan using {model_index_name(EXPLAIN.key)}" in plan
    assert "model_key = 'local:test/explain'" not in plan.split("Index Scan")[0]

    result = search(engine, "zzz", "balanced", serving=EXPLAIN, tenant="explain",
                    embedder_factory=lambda: FixedQuery(EXPLAIN, query))
    # Rows of the 8-dimension model share the column: the typed cast never sees them.
    assert result.meta.degraded_reason is None and len(result.hits) == 10
    assert {int(h.id) for h in result.hits} <= set(many_vectors)
    scores = [h.score for h in result.hits]
    assert scores == sorted(scores, reverse=True)

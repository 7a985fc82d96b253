"""``POST /v1/search`` over the session's embedded PostgreSQL and the real model."""

from __future__ import annotations

import warnings
from collections.abc import Iterator

import pytest
import sqlalchemy as sa

with warnings.catch_warnings():
    warnings.filterwarnings("ignore", message="Using `httpx` with `starlette.testclient`")
    from fastapi.testclient import TestClient

from ragplate.api.app import create_app
from ragplate.catalog.settings import Settings
from ragplate.infra.models.base import Embedder
from ragplate.infra.runtime import Runtime
from tests.testing.people import bearer
from tests.testing.records import CachingEmbedder, load_corpus

pytestmark = pytest.mark.integration

HIT_FIELDS = {"id", "title", "excerpt", "score", "locale", "similarity"}
META_FIELDS = {"mode_requested", "mode", "degraded_reason", "model_key", "strategies",
               "reranked"}


@pytest.fixture(scope="module")
def keys(settings: Settings, engine: sa.Engine, embedder: Embedder) -> dict[str, int]:
    assert Runtime(settings).active_profile().key == embedder.profile.key
    return load_corpus(engine, CachingEmbedder(embedder))


@pytest.fixture(scope="module")
def client(settings: Settings, keys: dict[str, int]) -> Iterator[TestClient]:
    app = create_app(settings)
    with TestClient(app, headers=bearer(app.state.runtime.engine)) as test_client:
        yield test_client


def test_balanced_search_answers_hits_and_meta(client: TestClient, keys: dict[str, int]) -> None:
    response = client.post("/v1/search", json={
        "entity": "cms.contents", "query": "how do I get my money back", "mode": "balanced",
        "locale": "en", "top_k": 3})

    assert response.status_code == 200, response.text
    body = response.json()
    assert set(body) == {"hits", "meta"} and set(body["meta"]) == {"search"}
    assert len(body["hits"]) == 3
    assert all(set(hit) == HIT_FIELDS for hit in body["hits"])
    assert body["hits"][0]["id"] == str(keys["refund"])
    assert body["hits"][0]["title"] == "Refund policy"
    search = body["meta"]["search"]
    assert set(search) == META_FIELDS
    assert (search["mode_requested"], search["mode"], search["degraded_reason"]) == (
        "balanced", "balanced", None)
    assert search["model_key"] == "local:intfloat/multilingual-e5-small"
    assert search["strategies"] == ["keyword", "vector", "hybrid"]


def test_fast_search_is_keyword_only(client: TestClient, keys: dict[str, int]) -> None:
    response = client.post("/v1/search", json={
        "entity": "cms.contents", "query": "stocktake", "mode": "fast", "locale": "en"})

    body = response.json()
    assert [h["id"] for h in body["hits"]] == [str(keys["stocktake"])]
    assert body["meta"]["search"]["strategies"] == ["keyword"]
    assert body["meta"]["search"]["model_key"] is None


def test_deep_without_a_reranker_says_why(client: TestClient) -> None:
    response = client.post("/v1/search", json={
        "entity": "cms.contents", "query": "password reset", "mode": "deep", "locale": "en"})

    search = response.json()["meta"]["search"]
    assert (search["mode_requested"], search["mode"]) == ("deep", "balanced")
    assert search["degraded_reason"] == "reranker_unavailable"


def test_tenant_and_locale_filter_the_hits(client: TestClient, keys: dict[str, int]) -> None:
    def ids(**extra: object) -> list[str]:
        payload = {"entity": "cms.contents", "query": "employee discount", "mode": "fast",
                   "locale": "en", **extra}
        return [h["id"] for h in client.post("/v1/search", json=payload).json()["hits"]]

    assert ids(tenant="acme") == [str(keys["acme_discount"])]
    assert ids(tenant="globex") == [str(keys["globex_discount"])]
    assert ids() == []
    assert ids(locale="it") == []


def test_an_unknown_entity_is_a_422_naming_it(client: TestClient) -> None:
    response = client.post("/v1/search", json={
        "entity": "cms.pages", "query": "x", "mode": "fast", "locale": "en"})

    assert response.status_code == 422
    assert response.json() == {"error": "UnknownEntityError",
                                "detail": "unknown entity 'cms.pages' (known: cms.contents)"}


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"mode": "turbo"}, "mode"),
        ({"query": ""}, "query"),
        ({"locale": "English"}, "locale"),
        ({"locale": None}, "locale"),
        ({"top_k": 0}, "top_k"),
        ({"top_k": 51}, "top_k"),
        ({"tenant": ""}, "tenant"),
        ({"entity": None}, "entity"),
        ({"query": "x\x00y"}, "query"),
        ({"query": " \t "}, "query"),
        ({"tenant": "a\x00b"}, "tenant"),
        ({"locale": "en" + "-abcdefgh" * 4}, "locale"),
        ({"top_k": "3"}, "top_k"),
        ({"top_k": True}, "top_k"),
        ({"index": "user"}, "index"),
    ],
)
def test_bad_requests_are_422_naming_the_field(
    client: TestClient, changes: dict[str, object], field: str
) -> None:
    payload = {"entity": "cms.contents", "query": "x", "mode": "fast", "locale": "en"}
    payload.update(changes)
    payload = {k: v for k, v in payload.items() if v is not None}

    response = client.post("/v1/search", json=payload)

    assert response.status_code == 422
    assert ["body", field] in [error["loc"] for error in response.json()["detail"]]


@pytest.mark.parametrize("mode", ["fast", "balanced"])
def test_an_unresolvable_serving_profile_leaves_keyword_search_answering(
    client: TestClient, engine: sa.Engine, keys: dict[str, int], mode: str,
) -> None:
    from ragplate.infra import settings_store

    with engine.begin() as conn:
        serving = settings_store.read(conn, settings_store.ACTIVE_PROFILE)
        settings_store.write_managed(conn, settings_store.ACTIVE_PROFILE, "local:gone/model")
    try:
        response = client.post("/v1/search", json={
            "entity": "cms.contents", "query": "stocktake", "mode": mode, "locale": "en"})
    finally:
        with engine.begin() as conn:
            settings_store.write_managed(conn, settings_store.ACTIVE_PROFILE, serving)

    assert response.status_code == 200, response.text
    body = response.json()
    assert [h["id"] for h in body["hits"]] == [str(keys["stocktake"])]
    search = body["meta"]["search"]
    assert (search["mode"], search["strategies"], search["model_key"]) == (
        "fast", ["keyword"], None)
    expected_reason = None if mode == "fast" else "embedder_unavailable"
    assert search["degraded_reason"] == expected_reason

"""``POST /v1/docs/search`` on ragplate's own documentation: ``top_k`` distinct sources,
even when one long guide's chunks fill the first ranks."""

from __future__ import annotations

import warnings
from collections.abc import Iterator

import pytest

from ragplate.api.app import create_app
from ragplate.catalog.settings import BUNDLED_DOCS, Settings
from ragplate.infra.models.base import Embedder
from ragplate.infra.runtime import Runtime
from ragplate.tasks.indexing.read import developer_corpus, read_sources
from tests.testing.corpus import index_documents
from tests.testing.people import bearer

with warnings.catch_warnings():
    warnings.filterwarnings("ignore", message="Using `httpx` with `starlette.testclient`")
    from fastapi.testclient import TestClient

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def client(settings: Settings, embedder: Embedder) -> Iterator[TestClient]:
    runtime = Runtime(settings)
    store = runtime.store("developer", runtime.active_profile())
    store.reset()
    documents = developer_corpus(read_sources({"faq-app-ragplate": BUNDLED_DOCS}))
    index_documents(store, embedder, documents)
    app = create_app(settings)
    with TestClient(app, headers=bearer(app.state.runtime.engine)) as test_client:
        yield test_client
    store.reset()


@pytest.mark.parametrize("top_k", [3, 5, 10])
def test_the_api_returns_top_k_distinct_sources(client: TestClient, top_k: int) -> None:
    response = client.post("/v1/docs/search", json={
        "query": "How does incremental indexing work?", "top_k": top_k})

    assert response.status_code == 200, response.text
    hits = response.json()["hits"]
    labels = [h["source_label"] for h in hits]
    assert len(labels) == top_k and len(set(labels)) == top_k
    assert labels[0] == "faq-app-ragplate/indexing.md"
    scores = [h["score"] for h in hits]
    assert scores == sorted(scores, reverse=True)
    assert all(0.0 < h["similarity"] <= 1.0 for h in hits)

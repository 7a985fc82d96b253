"""How ranked labels get their depth and their similarity, on the memory store with
literal vectors (no model): the depth cap, keyword-only labels measured on their own
chunks, and the floor on similarity in hybrid mode."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from ragplate.infra.stores.memory import MemoryStore
from ragplate.tasks.retrieval import documentation as retrieval
from ragplate.tasks.retrieval.documentation import ranked_labels, retrieve_developer
from tests.testing.document_store_contract import TINY, item, load, vec


class Fixed:
    """An embedder whose every query is one literal vector."""

    profile = TINY

    def __init__(self, vector: np.ndarray) -> None:
        self.vector = vector / np.linalg.norm(vector)

    def embed_query(self, text: str) -> np.ndarray:
        return self.vector

    def embed_passages(self, texts: Any) -> np.ndarray:
        raise AssertionError("retrieval embeds no passage")


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def store_with(items: list[Any]) -> MemoryStore:
    store = MemoryStore("developer", TINY)
    store.reset()
    load(store, items)
    return store


def test_a_keyword_only_label_gets_its_own_chunks_similarity() -> None:
    query = vec(1, 0, 0, 0)
    # Two sections of one source under their own labels; the query is near section A.
    a, b = vec(0.9, 0.1, 0, 0), vec(0.2, 0.9, 0.3, 0)
    store = store_with([item("u.md", 0, a, "about apples", safe_source_label="U · A"),
                        item("u.md", 1, b, "about bananas", safe_source_label="U · B")])
    hit = next(h for h in store.search(query, top_k=2) if h.metadata["safe_source_label"]
               == "U · B")

    similarity = retrieval._similarity(store, query, hit, None, "safe_source_label")

    assert similarity == pytest.approx(cosine(query, b), abs=1e-6)
    assert similarity < cosine(query, a)


def test_hybrid_similarity_is_the_cosine_and_the_floor_applies_to_it() -> None:
    query = vec(1, 0, 0, 0)
    near, far = vec(1, 0.1, 0, 0), vec(0.1, 1, 0, 0)
    store = store_with([item("near.md", 0, near, "general text"),
                        item("far.md", 0, far, "zebra zebra zebra")])
    embedder = Fixed(query)

    hits = retrieve_developer("zebra", store=store, embedder=embedder,  # type: ignore[arg-type]
                              top_k=2, strategy="hybrid")
    by_label = {h.source_label: h for h in hits}
    assert set(by_label) == {"near.md", "far.md"}
    # The fused score is on another scale; the similarity is the cosine in both.
    assert by_label["far.md"].score < 0.2
    assert by_label["far.md"].similarity == pytest.approx(cosine(query, far), abs=1e-6)
    assert by_label["near.md"].similarity == pytest.approx(cosine(query, near), abs=1e-6)

    floored = retrieve_developer("zebra", store=store, embedder=embedder,  # type: ignore[arg-type]
                                 top_k=2, strategy="hybrid", min_score=0.5)
    assert [h.source_label for h in floored] == ["near.md"]


def test_widening_stops_at_the_depth_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    # One long document and two short ones: five labels asked, three exist.
    items = [item("long.md", i, vec(1, 0.01 * i, 0, 0)) for i in range(40)]
    items += [item("a.md", 0, vec(0, 1, 0, 0)), item("b.md", 0, vec(0, 0, 1, 0))]
    store = store_with(items)
    depths: list[int] = []
    search = store.search

    def counted(vector: np.ndarray, *, top_k: int, **kw: Any) -> Any:
        depths.append(top_k)
        return search(vector, top_k=top_k, **kw)

    monkeypatch.setattr(store, "search", counted)
    monkeypatch.setattr(retrieval, "MAX_DEPTH", 32)

    ranked = ranked_labels("q", store=store, embedder=Fixed(vec(1, 0, 0, 0)),  # type: ignore[arg-type]
                           top_k=5, filters=None, strategy="vector", label_key=None)

    # 20 chunks first (5 × 4), then the cap: the 42 chunks are never all fetched, and the
    # 32 nearest are all the long document's.
    assert depths == [20, 32]
    assert [r.hit.source for r in ranked] == ["long.md"]
    # Without the cap the widening reaches the other two.
    monkeypatch.setattr(retrieval, "MAX_DEPTH", 4096)
    depths.clear()
    ranked = ranked_labels("q", store=store, embedder=Fixed(vec(1, 0, 0, 0)),  # type: ignore[arg-type]
                           top_k=5, filters=None, strategy="vector", label_key=None)
    assert depths == [20, 40, 80]
    assert sorted(r.hit.source for r in ranked) == ["a.md", "b.md", "long.md"]

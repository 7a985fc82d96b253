"""A reusable contract every :class:`DocumentStore` driver must pass.

Subclass :class:`DocumentStoreContract` and provide the ``store_factory`` fixture: a
callable ``(index, profile) -> DocumentStore`` whose stores are isolated from other tests,
and where two calls with the same arguments in one test reach the same data.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest

from ragplate.catalog.documents import AccessContext, AudiencePolicy, Chunk
from ragplate.catalog.errors import DimensionMismatchError, EmbeddingError
from ragplate.catalog.profiles import EmbeddingProfile
from ragplate.infra.stores.base import (
    DocumentStore,
    EmbeddedChunk,
    SearchFilters,
    SourceRecord,
    matches,
    similarity_score,
)

StoreFactory = Callable[[str, EmbeddingProfile], DocumentStore]

TINY = EmbeddingProfile(key="local:test/tiny", dimensions=4, local_variant="original")
OTHER = EmbeddingProfile(key="openai_compatible:test/other", dimensions=4)
TINY_L2 = EmbeddingProfile(
    key="local:test/tiny-l2", dimensions=4, similarity="l2", local_variant="original"
)
TINY_IP = EmbeddingProfile(
    key="local:test/tiny-ip", dimensions=4, similarity="inner_product", local_variant="original"
)
WIDE = EmbeddingProfile(key="local:test/wide", dimensions=384, local_variant="original")

Q = np.array([1.0, 0.0, 0.0, 0.0], dtype=np.float32)

#: Filter corpus: one chunk per source, covering every shape of the filtered fields.
FILTER_DOCS: dict[str, dict[str, Any]] = {
    "u-global": {"audience": "user", "module": "billing", "locale": "en",
                 "tenant_scope": "global", "required_permissions": []},
    "u-t1": {"audience": "user", "module": "billing", "locale": "it",
             "tenant_scope": "t1", "required_permissions": ["billing.view"],
             "cross_cutting_user": "true"},
    "u-list": {"audience": "user", "module": "crm", "locale": "en",
               "tenant_scope": ["t2", 7], "required_permissions": ["crm.view", "crm.edit"]},
    "shared-num": {"audience": "shared", "module": "crm", "locale": "en", "tenant_scope": 7,
                   "cross_cutting_user": True},
    "dev": {"audience": "developer", "module": "core", "locale": "und",
            "tenant_scope": "global", "required_permissions": None},
}  # fmt: skip

ALL_DOCS = set(FILTER_DOCS)
NO_PERMS = {"u-global", "shared-num", "dev"}
FILTER_CASES = [
    pytest.param(SearchFilters(), ALL_DOCS, id="no-filter"),
    pytest.param(SearchFilters(audiences=("user",)), {"u-global", "u-t1", "u-list"}, id="audience"),
    pytest.param(SearchFilters(audiences=("user", "shared")), ALL_DOCS - {"dev"}, id="audiences"),
    pytest.param(SearchFilters(audiences=()), set(), id="no-audience-allowed"),
    pytest.param(SearchFilters(modules=("crm",)), {"u-list", "shared-num"}, id="module"),
    pytest.param(SearchFilters(locales=("it",)), {"u-t1"}, id="locale"),
    # A cross-cutting guide (true, not the string "true") survives another module's scope.
    pytest.param(SearchFilters(scope_module="billing"), {"u-global", "u-t1", "shared-num"},
                 id="scope-module"),
    pytest.param(SearchFilters(scope_module="core", audiences=("user", "shared")),
                 {"shared-num"}, id="scope-module-additive"),
    pytest.param(SearchFilters(tenant_scopes=("global",)), {"u-global", "dev"}, id="tenant-global"),
    pytest.param(SearchFilters(tenant_scopes=("t1",)), {"u-t1"}, id="tenant-id"),
    pytest.param(SearchFilters(tenant_scopes=("t2",)), {"u-list"}, id="tenant-in-list"),
    pytest.param(SearchFilters(tenant_scopes=("7",)), {"u-list", "shared-num"}, id="tenant-num"),
    pytest.param(
        SearchFilters(tenant_scopes=("global", "t1")), {"u-global", "dev", "u-t1"}, id="tenants"
    ),
    pytest.param(SearchFilters(permissions=frozenset()), NO_PERMS, id="perms-none-held"),
    pytest.param(
        SearchFilters(permissions=frozenset({"billing.view"})), NO_PERMS | {"u-t1"}, id="perms-one"
    ),
    pytest.param(SearchFilters(permissions=frozenset({"crm.view"})), NO_PERMS, id="perms-partial"),
    pytest.param(
        SearchFilters(permissions=frozenset({"crm.view", "crm.edit", "billing.view", "x"})),
        ALL_DOCS,
        id="perms-superset",
    ),
    pytest.param(
        SearchFilters(
            audiences=("user", "shared"),
            locales=("en",),
            tenant_scopes=("global", "t2"),
            permissions=frozenset({"crm.view", "crm.edit"}),
        ),
        {"u-global", "u-list"},
        id="combination",
    ),
]


_POLICY = AudiencePolicy()


def vec(*values: float) -> np.ndarray:
    """A float32 vector from literal values."""
    return np.array(values, dtype=np.float32)


def item(
    source: str, ordinal: int, vector: np.ndarray, text: str | None = None, **metadata: Any
) -> EmbeddedChunk:
    """One embedded chunk; the text defaults to ``source#ordinal``."""
    return EmbeddedChunk(Chunk(source, ordinal, text or f"{source}#{ordinal}", metadata), vector)


def records(
    items: Sequence[EmbeddedChunk], profile: EmbeddingProfile, version: str = "v1"
) -> list[SourceRecord]:
    """The source records describing ``items`` (hash ``<version>-<source>``)."""
    counts = Counter(i.chunk.source for i in items)
    return [SourceRecord(s, f"{version}-{s}", profile.key, n) for s, n in sorted(counts.items())]


def load(store: DocumentStore, items: Sequence[EmbeddedChunk], version: str = "v1") -> None:
    """Add ``items`` with matching source records."""
    store.add(items, records(items, store.profile, version))


def texts(store: DocumentStore, top_k: int = 100) -> list[str]:
    """Every chunk text reachable by search, sorted."""
    if store.count() == 0:
        return []
    return sorted(h.text for h in store.search(Q, top_k=top_k))


def basic_items() -> list[EmbeddedChunk]:
    """Four chunks at known angles from :data:`Q` (a nearest, d opposite)."""
    return [
        item("a", 0, vec(1, 0, 0, 0)),
        item("b", 0, vec(0.9, 0.1, 0, 0)),
        item("c", 0, vec(0, 1, 0, 0)),
        item("d", 0, vec(-1, 0, 0, 0)),
    ]


class DocumentStoreContract:
    """Behaviour every documentation-store driver must share (run once per driver)."""

    @pytest.fixture
    def store_factory(self) -> StoreFactory:
        """Override: ``(index, profile) -> DocumentStore``, isolated per test."""
        raise NotImplementedError

    @pytest.fixture
    def store(self, store_factory: StoreFactory) -> DocumentStore:
        """The developer index of the tiny cosine profile."""
        return store_factory("developer", TINY)

    def test_implements_protocol(self, store: DocumentStore) -> None:
        assert isinstance(store, DocumentStore)
        assert store.profile == TINY

    def test_add_and_count(self, store: DocumentStore) -> None:
        assert store.count() == 0
        load(store, basic_items())
        load(store, [item("e", 0, vec(0, 0, 1, 0)), item("e", 1, vec(0, 0, 0, 1))])
        assert store.count() == 6

    def test_search_on_empty_store_returns_nothing(self, store: DocumentStore) -> None:
        assert store.search(Q, top_k=5) == []
        assert store.search(Q, top_k=5, filters=SearchFilters(audiences=("user",))) == []

    def test_search_ranks_nearest_first(self, store: DocumentStore) -> None:
        load(store, basic_items())
        hits = store.search(Q, top_k=4)
        assert [h.source for h in hits] == ["a", "b", "c", "d"]
        assert hits[0].score == pytest.approx(1.0, abs=1e-5)
        assert hits[0].text == "a#0" and hits[0].ordinal == 0
        assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)

    @pytest.mark.parametrize("profile", [TINY, TINY_L2, TINY_IP], ids=lambda p: p.similarity)
    def test_scores_follow_similarity_score(
        self, store_factory: StoreFactory, profile: EmbeddingProfile
    ) -> None:
        store = store_factory("developer", profile)
        items = [*basic_items(), item("e", 0, vec(2, 1, 0.5, -3))]
        load(store, items)
        query = vec(0.5, 2, -1, 0.25)
        expected = similarity_score(profile, query, np.vstack([i.embedding for i in items]))
        scores = {h.source: h.score for h in store.search(query, top_k=10)}
        want = {i.chunk.source: float(s) for i, s in zip(items, expected, strict=True)}
        assert scores == pytest.approx(want, abs=1e-4)

    def test_zero_vector_is_refused_and_nothing_written(self, store: DocumentStore) -> None:
        load(store, basic_items())
        with pytest.raises(EmbeddingError, match="zero vector"):
            load(store, [item("z", 0, vec(0, 0, 0, 0))])
        assert store.count() == 4 and "z" not in store.sources()

    def test_top_k(self, store: DocumentStore) -> None:
        load(store, basic_items())
        assert [h.source for h in store.search(Q, top_k=2)] == ["a", "b"]
        assert len(store.search(Q, top_k=50)) == 4

    @pytest.mark.parametrize("top_k", [0, -3])
    def test_top_k_must_be_positive(self, store: DocumentStore, top_k: int) -> None:
        load(store, basic_items())
        with pytest.raises(ValueError, match="top_k"):
            store.search(Q, top_k=top_k)

    def test_query_of_wrong_dimension_is_refused(self, store: DocumentStore) -> None:
        load(store, basic_items())
        with pytest.raises(DimensionMismatchError):
            store.search(vec(1, 0, 0), top_k=1)

    def test_min_score(self, store: DocumentStore) -> None:
        load(store, basic_items())
        assert [h.source for h in store.search(Q, top_k=4, min_score=0.5)] == ["a", "b"]
        assert store.search(Q, top_k=4, min_score=1.5) == []
        assert len(store.search(Q, top_k=4, min_score=-1.5)) == 4

    def test_ties_break_on_source_then_ordinal(self, store: DocumentStore) -> None:
        same = vec(0, 1, 0, 0)
        load(store, [item("b", 0, same), item("a", 2, same), item("a", 1, same)])
        hits = store.search(Q, top_k=3)
        assert [(h.source, h.ordinal) for h in hits] == [("a", 1), ("a", 2), ("b", 0)]

    @pytest.mark.parametrize(("filters", "expected"), FILTER_CASES)
    def test_filters(
        self, store: DocumentStore, filters: SearchFilters, expected: set[str]
    ) -> None:
        # The expectation must agree with the reference semantics in base.matches.
        assert {s for s, m in FILTER_DOCS.items() if matches(m, filters)} == expected
        angles = np.linspace(0, np.pi / 3, len(FILTER_DOCS))
        docs = zip(angles, FILTER_DOCS.items(), strict=True)
        load(store, [item(s, 0, vec(np.cos(a), np.sin(a), 0, 0), **m) for a, (s, m) in docs])
        hits = store.search(Q, top_k=10, filters=filters)
        assert {h.source for h in hits} == expected
        assert len(store.search(Q, top_k=1, filters=filters)) == min(1, len(expected))

    @pytest.mark.parametrize(("filters", "expected"), [
        (SearchFilters(sources=("u-t1", "dev", "missing")), {"u-t1", "dev"}),
        (SearchFilters(sources=("u-list",), audiences=("shared",)), set()),
        (SearchFilters(sources=("u-list", "shared-num"), audiences=("shared",)),
         {"shared-num"}),
    ])
    def test_a_sources_filter_keeps_only_their_chunks(
        self, store: DocumentStore, filters: SearchFilters, expected: set[str]
    ) -> None:
        assert {s for s, m in FILTER_DOCS.items() if matches(m, filters, s)} == expected
        load(store, [item(s, 0, vec(1, 0.1 * i, 0, 0), **m)
                     for i, (s, m) in enumerate(FILTER_DOCS.items())])
        assert {h.source for h in store.search(Q, top_k=10, filters=filters)} == expected
        keyword = getattr(store, "keyword_search", None)
        if keyword is not None:  # the texts are the sources' names: "u" is in three of them
            found = {h.source for h in keyword("u", top_k=10, filters=filters)}
            assert found == expected & {"u-global", "u-t1", "u-list"}

    @pytest.mark.parametrize("strategy", ["vector", "hybrid"])
    def test_retrieval_returns_k_distinct_sources_past_a_long_document(
        self, store_factory: StoreFactory, strategy: str
    ) -> None:
        from ragplate.tasks.retrieval.documentation import retrieve_developer, retrieve_user

        store = store_factory("developer", TINY)
        if strategy == "hybrid" and not hasattr(store, "keyword_search"):
            pytest.skip("the driver has no keyword search")
        user = {"audience": "user", "tenant_scope": "global", "required_permissions": [],
                "module": "m", "locale": "en", "canonical_source": "c", "version": "1",
                "policy_classification": "user_safe",
                "policy_classification_version": "in-app-docs-v1"}
        # One long document whose 120 chunks are all nearer the query than any other source.
        long = [item("long.md", i, vec(1, 0.001 * i, 0, 0), f"long part {i}", **user,
                     safe_source_label="Long") for i in range(120)]
        others = [item(f"other-{n}.md", 0, vec(1, 0.5 + n, 0, 0), f"other {n}", **user,
                       safe_source_label=f"Other {n}") for n in range(6)]
        load(store, long + others)

        class Fixed:
            profile = TINY

            def embed_query(self, text: str) -> np.ndarray:
                return Q

            def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
                return np.tile(Q, (len(texts), 1))

        for k in (1, 5, 7, 10):
            hits = retrieve_developer("part", store=store, embedder=Fixed(), top_k=k,
                                      strategy=strategy)  # type: ignore[arg-type]
            labels = [h.source_label for h in hits]
            assert len(labels) == len(set(labels)) == min(k, 7)
            assert labels[0] == "long.md"
        user_store = store_factory("user", TINY)
        load(user_store, long + others)
        user_hits = retrieve_user("part", store=user_store, embedder=Fixed(),
                                  access=AccessContext(), policy=_POLICY, top_k=5,
                                  strategy=strategy)  # type: ignore[arg-type]
        assert [h.source_label for h in user_hits][:1] == ["Long"]
        assert len({h.source_label for h in user_hits}) == 5

    def test_hit_metadata_is_a_fresh_copy(self, store: DocumentStore) -> None:
        chunk = item("a", 0, Q, audience="user", heading_breadcrumb=["Intro"])
        load(store, [chunk])
        chunk.chunk.metadata["audience"] = "changed after add"
        first = store.search(Q, top_k=1)[0]
        assert first.metadata == {"audience": "user", "heading_breadcrumb": ["Intro"]}
        first.metadata["audience"] = "mutated"
        first.metadata["heading_breadcrumb"].append("x")
        again = store.search(Q, top_k=1)[0].metadata
        assert again == {"audience": "user", "heading_breadcrumb": ["Intro"]}

    def test_replace_sources_replaces_only_listed(self, store: DocumentStore) -> None:
        load(store, [*basic_items(), item("a", 1, vec(1, 1, 0, 0))])
        new = [item("a", 0, vec(1, 0, 0, 0), text="a new")]
        store.replace_sources(new, records(new, store.profile, "v2"))
        assert texts(store) == ["a new", "b#0", "c#0", "d#0"]
        known = store.sources()
        assert (known["a"].content_hash, known["a"].chunk_count) == ("v2-a", 1)
        assert known["b"].content_hash == "v1-b"

    def test_replace_sources_is_atomic(self, store: DocumentStore) -> None:
        load(store, basic_items())
        before = (texts(store), store.sources())
        bad = [item("a", 0, vec(1, 0, 0, 0), text="a new"), item("b", 0, vec(1, 0, 0))]
        with pytest.raises(DimensionMismatchError):
            store.replace_sources(bad, records(bad, store.profile, "v2"))
        stray = [item("a", 0, Q, text="a new"), item("zz", 0, Q)]
        with pytest.raises(ValueError, match="zz"):
            store.replace_sources(stray, records(stray[:1], store.profile, "v2"))
        assert (texts(store), store.sources()) == before

    def test_replace_with_no_chunks_keeps_the_record(self, store: DocumentStore) -> None:
        load(store, basic_items())
        store.replace_sources([], [SourceRecord("a", "empty", TINY.key, 0)])
        assert store.count() == 3
        assert store.sources()["a"] == SourceRecord("a", "empty", TINY.key, 0)

    def test_delete_sources(self, store: DocumentStore) -> None:
        load(store, [*basic_items(), item("a", 1, vec(1, 1, 0, 0))])
        assert store.delete_sources(["a", "c", "missing"]) == 3
        assert texts(store) == ["b#0", "d#0"]
        assert set(store.sources()) == {"b", "d"}
        assert store.delete_sources([]) == 0

    def test_sources_records(self, store: DocumentStore) -> None:
        items = [*basic_items(), item("a", 1, vec(1, 1, 0, 0))]
        load(store, items)
        assert store.sources() == {
            "a": SourceRecord("a", "v1-a", TINY.key, 2),
            **{s: SourceRecord(s, f"v1-{s}", TINY.key, 1) for s in "bcd"},
        }

    def test_sources_keep_the_vector_recipe_and_its_replacement(
        self, store: DocumentStore
    ) -> None:
        a, b = basic_items()[:2]
        store.add([a, b], [SourceRecord("a", "h", TINY.key, 1, "document-context=0.0"),
                           SourceRecord("b", "h", TINY.key, 1)])
        assert {s: r.vector_recipe for s, r in store.sources().items()} == {
            "a": "document-context=0.0", "b": ""}
        store.replace_sources([a], [SourceRecord("a", "h2", TINY.key, 1, "document-context=1.0",
                                                 "docs")])
        assert store.sources()["a"] == SourceRecord("a", "h2", TINY.key, 1, "document-context=1.0",
                                                    "docs")
        assert store.sources()["b"].root is None

    def test_adding_records_alone_updates_them_and_keeps_the_chunks(
        self, store: DocumentStore
    ) -> None:
        load(store, basic_items())
        before = store.search(Q, top_k=10)
        store.add([], [SourceRecord("a", "v1-a", TINY.key, 1, "document-context=1.0")])
        assert store.sources()["a"].vector_recipe == "document-context=1.0"
        assert store.sources()["b"] == SourceRecord("b", "v1-b", TINY.key, 1)
        assert store.search(Q, top_k=10) == before

    def test_reset(self, store: DocumentStore) -> None:
        load(store, basic_items())
        store.reset()
        assert (store.count(), store.sources(), store.search(Q, top_k=3)) == (0, {}, [])
        load(store, basic_items()[:1])
        assert store.count() == 1

    def test_second_instance_sees_the_same_data(self, store_factory: StoreFactory) -> None:
        first, second = store_factory("developer", TINY), store_factory("developer", TINY)
        assert second.count() == 0
        load(first, basic_items())
        assert second.count() == 4
        assert [h.source for h in second.search(Q, top_k=1)] == ["a"]

    def test_indexes_are_isolated(self, store_factory: StoreFactory) -> None:
        developer, user = store_factory("developer", TINY), store_factory("user", TINY)
        load(developer, basic_items())
        assert (user.count(), user.sources(), user.search(Q, top_k=3)) == (0, {}, [])
        load(user, [item("u", 0, Q)])
        developer.delete_sources(["u"])
        user.reset()
        assert developer.count() == 4 and set(developer.sources()) == set("abcd")

    def test_model_keys_are_isolated(self, store_factory: StoreFactory) -> None:
        tiny, other = store_factory("developer", TINY), store_factory("developer", OTHER)
        load(tiny, basic_items())
        assert (other.count(), other.sources(), other.search(Q, top_k=3)) == (0, {}, [])
        load(other, [item("a", 0, Q, text="other a")])
        assert other.sources()["a"].model_key == OTHER.key
        tiny.reset()
        assert [h.text for h in other.search(Q, top_k=3)] == ["other a"]

    def test_wrong_dimension_add_writes_nothing(self, store: DocumentStore) -> None:
        bad = [item("a", 0, Q), item("b", 0, vec(1, 0, 0, 0, 0))]
        with pytest.raises(DimensionMismatchError):
            load(store, bad)
        assert (store.count(), store.sources()) == (0, {})

    def test_chunks_of_unlisted_sources_are_refused(self, store: DocumentStore) -> None:
        items = [item("a", 0, Q), item("b", 0, Q)]
        with pytest.raises(ValueError, match="unlisted sources: b"):
            store.add(items, records(items[:1], store.profile))
        assert (store.count(), store.sources()) == (0, {})

    def test_384_dimensions(self, store_factory: StoreFactory) -> None:
        store = store_factory("user", WIDE)
        vectors = np.random.default_rng(7).standard_normal((60, 384)).astype(np.float32)
        load(store, [item(f"s{i // 6}", i % 6, v) for i, v in enumerate(vectors)])
        hits = store.search(vectors[17], top_k=3)
        assert (hits[0].source, hits[0].ordinal) == ("s2", 5)
        assert hits[0].score == pytest.approx(1.0, abs=1e-5)
        assert store.count() == 60 and store.sources()["s9"].chunk_count == 6

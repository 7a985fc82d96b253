"""The Elasticsearch documentation store: the shared contracts (vector search, keyword
search, the user index's filters) on the noida-db emulator, and on a real cluster when
``RAGPLATE_ELASTICSEARCH_URL`` names one; plus what only this driver has (its index and
alias, a mapping of other dimensions named in one line, 429s retried)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import numpy as np
import pytest

from ragplate.catalog.errors import IndexMappingError
from ragplate.catalog.profiles import EmbeddingProfile
from ragplate.catalog.settings import Settings
from ragplate.infra.elasticsearch import indexes
from ragplate.infra.stores import make_store
from ragplate.infra.stores.base import DocumentStore
from ragplate.infra.stores.elasticsearch import ElasticsearchStore, score_to_similarity
from tests.testing.document_store_contract import (
    TINY,
    DocumentStoreContract,
    Q,
    StoreFactory,
    basic_items,
    item,
    load,
)
from tests.testing.keyword_search_contract import KeywordSearchContract
from tests.testing.term_statistics_contract import TermStatisticsContract


class TestElasticsearchStore(DocumentStoreContract, KeywordSearchContract,
                             TermStatisticsContract):
    """The contracts on the Elasticsearch driver (test ids name the target: the noida-db
    emulator, or a real cluster)."""

    @pytest.fixture
    def store_factory(self, es_settings: Settings) -> Iterator[StoreFactory]:
        token = uuid.uuid4().hex[:8]
        made: list[DocumentStore] = []

        def make(index: str, profile: EmbeddingProfile) -> DocumentStore:
            store = ElasticsearchStore.from_settings(f"{index}-{token}", profile, es_settings)
            made.append(store)
            return store

        yield make
        for store in made:
            store.reset()

    def test_the_first_index_of_a_role_gets_its_alias(self, store: ElasticsearchStore) -> None:
        load(store, basic_items())
        assert indexes.alias_targets(store.client, store.alias) == [store.name]
        assert store.name.startswith(store.alias + "_")

    def test_modules_lists_what_the_chunks_declare(self, store: ElasticsearchStore) -> None:
        assert store.modules() == set()
        load(store, [item("a", 0, Q, module="billing"), item("b", 0, Q, module="crm"),
                     item("c", 0, Q)])
        assert store.modules() == {"billing", "crm"}

    def test_an_index_of_other_dimensions_is_named_with_the_command(
        self, store: ElasticsearchStore
    ) -> None:
        load(store, basic_items())
        wider = EmbeddingProfile(key=TINY.key, dimensions=8, local_variant="original")
        other = ElasticsearchStore(store.index, wider, store.client, prefix="rptest")
        other.name = store.name  # the same index, as a profile whose dimensions changed
        with pytest.raises(IndexMappingError) as error:
            other.ensure_index()
        message = str(error.value)
        assert store.name in message and "dimensions" in message and "\n" not in message
        assert "ragplate index create --profile" in message and "--force" in message


def test_make_store_chooses_elasticsearch_from_the_url(es_settings: Settings) -> None:
    store = make_store(es_settings.vector_store, index="developer", profile=TINY,
                       settings=es_settings)
    assert isinstance(store, ElasticsearchStore) and es_settings.vector_store == "elasticsearch"


@pytest.mark.parametrize(("similarity", "score", "expected"), [
    ("cosine", 1.0, 1.0), ("cosine", 0.25, -0.5),
    ("l2", 1 / (1 + 9), -3.0), ("inner_product", 4.0, 3.0), ("inner_product", 0.25, -3.0),
])
def test_knn_scores_convert_back_to_similarities(similarity: str, score: float,
                                                 expected: float) -> None:
    assert score_to_similarity(similarity, score) == pytest.approx(expected)


def test_zero_vector_query_on_an_empty_index(es_settings: Settings) -> None:
    store = ElasticsearchStore.from_settings(f"empty-{uuid.uuid4().hex[:6]}", TINY, es_settings)
    assert store.search(np.asarray(Q), top_k=3) == [] and store.count() == 0
    assert store.sources() == {} and store.delete_sources(["x"]) == 0


def test_a_permission_written_between_the_clause_and_the_query_stays_hidden(
    es_settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The permission clause names the permissions the index held a moment before the
    query; a gated chunk written in between must still not be returned (fails closed)."""
    from ragplate.infra.stores.base import SearchFilters

    store = ElasticsearchStore.from_settings(f"perms-{uuid.uuid4().hex[:6]}", TINY, es_settings)
    try:
        load(store, [item("open", 0, Q, required_permissions=[])])
        held_before = store._permission_values

        def then_a_write_lands() -> set[str]:
            seen = held_before()
            load(store, [item("secret", 0, Q, required_permissions=["hr.salaries"])])
            return seen

        monkeypatch.setattr(store, "_permission_values", then_a_write_lands)
        nobody = SearchFilters(permissions=frozenset())

        assert [h.source for h in store.search(Q, top_k=5, filters=nobody)] == ["open"]
        assert "secret" not in {h.source for h in store.keyword_search(
            "secret", top_k=5, filters=nobody)}
    finally:
        store.reset()


def test_a_refused_write_raises_its_own_error_when_the_clean_up_fails_too(
    es_settings: Settings, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from ragplate.catalog.errors import SearchEngineError
    from ragplate.infra.stores import elasticsearch as driver

    store = ElasticsearchStore.from_settings(f"refused-{uuid.uuid4().hex[:6]}", TINY,
                                             es_settings)
    try:
        store.ensure_index()

        def refused(*args: object, **kwargs: object) -> int:
            raise IndexMappingError(f"Elasticsearch index {store.name}: mapping conflict (x)")

        def unreachable() -> None:
            raise SearchEngineError("Elasticsearch is unreachable")

        monkeypatch.setattr(driver, "bulk", refused)
        monkeypatch.setattr(store, "_refresh", unreachable)

        with pytest.raises(IndexMappingError, match="mapping conflict"):
            load(store, basic_items())
        assert "could not be removed" in caplog.text and store.name in caplog.text
    finally:
        monkeypatch.undo()
        store.reset()


def test_an_index_made_before_words_were_counted_gets_them_without_a_rewrite(
    es_settings: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    """An index whose mapping has no ``terms`` and whose chunks carry none (written by an
    earlier release): the assistant gets no counts (every word weighs alike, said once in
    the log), not counts that leave those chunks out; the field is added in place (by the
    next write, or by the recount) and the recount writes it for the old chunks, by partial
    updates that leave their vectors alone."""
    from ragplate.infra.elasticsearch import mappings
    from ragplate.infra.stores.base import recount_words, stale_word_counts
    from ragplate.infra.stores.elasticsearch import chunk_document
    from ragplate.infra.stores.lexical import tokens
    from tests.testing.document_store_contract import Q, records
    from tests.testing.keyword_search_contract import chunk

    store = ElasticsearchStore.from_settings(f"old-{uuid.uuid4().hex[:6]}", TINY, es_settings)
    try:
        before = store.mapping()
        del before["properties"]["terms"]
        store.client.indices.create(index=store.name, mappings=before,
                                    settings=mappings.settings_body(1, 0))
        old = [chunk("a.md", 0, "Rebuild the index", locale="en"),
               chunk("b.md", 0, "Index pages", locale="en")]
        for n, piece in enumerate(old):
            document = chunk_document(piece, "g0")
            del document["terms"]
            store.client.index(index=store.name, id=f"g0-{n}", document=document)
        store.client.indices.refresh(index=store.name)
        [word] = tokens("index", "english")

        with caplog.at_level("WARNING"):
            assert store.term_frequencies([word]) is None
            assert store.term_frequencies([word]) is None
        assert sum("index-docs` counts them again" in r.getMessage()
                   for r in caplog.records) == 1

        fresh = [chunk("b.md", 0, "Index pages", locale="en")]
        store.replace_sources(fresh, records(fresh, TINY))
        mapping = indexes.index_mapping(store.client, store.name) or {}
        assert mapping["properties"]["terms"] == {"type": "keyword"}
        assert store.term_frequencies([word]) is None  # a.md is still the old one's

        assert stale_word_counts(store) == 1
        assert recount_words(store) == 1
        assert store.term_frequencies([word]) == (2, {word: 2})
        assert {h.source for h in store.search(Q, top_k=5)} == {"a.md", "b.md"}
    finally:
        store.reset()


def test_a_chunk_replaced_while_its_words_are_counted_again_is_skipped(
    es_settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write that replaces a source between the recount's search and its update leaves
    the update a document that is gone (404): skipped, not a failed recount."""
    from ragplate.infra.stores import word_counts
    from ragplate.infra.stores.base import recount_words, stale_word_counts
    from ragplate.infra.stores.lexical import tokens
    from tests.testing.document_store_contract import load, records
    from tests.testing.keyword_search_contract import chunk

    store = ElasticsearchStore.from_settings(f"race-{uuid.uuid4().hex[:6]}", TINY,
                                             es_settings)
    try:
        with monkeypatch.context() as older:
            older.setattr(word_counts, "reading_mark", lambda: " reading:older")
            load(store, [chunk("a.md", 0, "Rebuild the index", locale="en"),
                         chunk("b.md", 0, "Index pages", locale="en")])
        search = store.client.search

        def search_then_replace(*args: object, **kwargs: object) -> object:
            found = search(*args, **kwargs)  # type: ignore[arg-type]
            monkeypatch.setattr(store.client, "search", search)
            fresh = [chunk("b.md", 0, "Index pages", locale="en")]
            store.replace_sources(fresh, records(fresh, TINY, "v2"))
            return found

        monkeypatch.setattr(store.client, "search", search_then_replace)
        assert recount_words(store) == 1
        [word] = tokens("index", "english")
        assert stale_word_counts(store) == 0
        assert store.term_frequencies([word]) == (2, {word: 2})
    finally:
        store.reset()

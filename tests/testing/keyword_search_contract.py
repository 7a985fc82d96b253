"""A reusable contract every driver offering :class:`KeywordSearch` must pass (beside the
vector contract of :mod:`tests.testing.document_store_contract`).

Subclass :class:`KeywordSearchContract` with the same ``store_factory`` fixture as the
vector contract. The rankings it checks are ones every driver agrees on: every driver reads
a chunk in its locale's language (stems, accents folded) and the query in that language.
"""

from __future__ import annotations

from typing import Any, cast

import pytest

from ragplate.catalog.schema import DOCS_SEARCH_TEXT_CHARS
from ragplate.infra.stores.base import DocumentStore, KeywordSearch, SearchFilters, StoreHit
from tests.testing.document_store_contract import TINY, StoreFactory, item, load, vec


def chunk(source: str, ordinal: int, text: str, **metadata: Any) -> Any:
    """An embedded chunk whose vector does not matter to keyword search."""
    return item(source, ordinal, vec(1, 0, 0, 0), text, **metadata)


def keyword(store: DocumentStore) -> KeywordSearch:
    """``store`` as a keyword-search store (the contract's first check)."""
    assert isinstance(store, KeywordSearch)
    return cast(KeywordSearch, store)


def sources(hits: list[StoreHit]) -> list[str]:
    return [h.source for h in hits]


class KeywordSearchContract:
    """Keyword (BM25) search that every keyword-search driver must share."""

    @pytest.fixture
    def keyword_store(self, store_factory: StoreFactory) -> DocumentStore:
        """The developer index of the tiny profile, for keyword search."""
        return store_factory("developer", TINY)

    def test_the_store_offers_keyword_search(self, keyword_store: DocumentStore) -> None:
        assert isinstance(keyword_store, KeywordSearch)

    def test_a_word_finds_the_label_that_holds_it(self, keyword_store: DocumentStore) -> None:
        load(keyword_store, [chunk("a.md", 0, "backflush issues stock"),
                             chunk("b.md", 0, "nothing relevant here")])
        assert sources(keyword(keyword_store).keyword_search("backflush", top_k=3)) == ["a.md"]

    def test_nothing_is_returned_for_unknown_or_stop_words(
        self, keyword_store: DocumentStore
    ) -> None:
        load(keyword_store, [chunk("a.md", 0, "the invoice of the month")])
        search = keyword(keyword_store)
        assert search.keyword_search("zebra", top_k=3) == []
        assert search.keyword_search("the and of", top_k=3) == []

    def test_a_chunk_is_read_in_its_locale_language(
        self, keyword_store: DocumentStore
    ) -> None:
        load(keyword_store, [
            chunk("it.md", 0, "Come ricostruire gli indici della città", locale="it"),
            chunk("en.md", 0, "Rebuilding the indexes of the city", locale="en"),
            chunk("und.md", 0, "Rebuilding notes", locale="und"),
        ])
        search = keyword(keyword_store)
        # Italian stems and folded accents: "ricostruisco" ~ "ricostruire", "citta" ~ "città".
        assert sources(search.keyword_search("ricostruisco l'indice", top_k=3)) == ["it.md"]
        assert sources(search.keyword_search("citta", top_k=3)) == ["it.md"]
        # English stems for the English chunk; the und one is read word for word.
        assert sources(search.keyword_search("rebuild index", top_k=3)) == ["en.md"]
        assert set(sources(search.keyword_search("rebuilding", top_k=3))) == {"en.md", "und.md"}

    def test_words_of_other_scripts_and_folded_letters_are_read(
        self, keyword_store: DocumentStore
    ) -> None:
        load(keyword_store, [
            chunk("de.md", 0, "Die Straßen der Stadt werden gesperrt", locale="de"),
            chunk("ru.md", 0, "Как перестроить индекс документации", locale="ru"),
            chunk("en.md", 0, "Streets of the city", locale="en"),
        ])
        search = keyword(keyword_store)
        # German: ß folds to ss and "Strasse" shares the stem of "Straßen".
        assert sources(search.keyword_search("Strasse", top_k=3)) == ["de.md"]
        # Russian: Cyrillic words, stemmed ("индексы" ~ "индекс").
        assert sources(search.keyword_search("индексы документации", top_k=3)) == ["ru.md"]

    def test_an_empty_index_finds_nothing(self, keyword_store: DocumentStore) -> None:
        assert keyword(keyword_store).keyword_search("invoice", top_k=3) == []

    def test_one_hit_per_label_its_chunk_holding_most_query_words(
        self, keyword_store: DocumentStore
    ) -> None:
        load(keyword_store, [chunk("guide.md", 0, "install the agent"),
                             chunk("guide.md", 1, "upgrade the agent, then upgrade again "
                                   "after install"),
                             chunk("guide.md", 2, "unrelated closing words"),
                             chunk("other.md", 0, "install once")])
        hits = keyword(keyword_store).keyword_search("upgrade install", top_k=5)
        assert sources(hits) == ["guide.md", "other.md"]
        assert hits[0].ordinal == 1
        assert "upgrade the agent" in hits[0].text

    def test_the_label_key_groups_chunks_of_several_sources(
        self, keyword_store: DocumentStore
    ) -> None:
        load(keyword_store, [
            chunk("a.md", 0, "credit note for a refund", safe_source_label="Billing"),
            chunk("b.md", 0, "issue a credit note", safe_source_label="Billing"),
            chunk("c.md", 0, "a note about shipping", safe_source_label="Shipping"),
        ])
        hits = keyword(keyword_store).keyword_search("credit note", top_k=5,
                                                     label_key="safe_source_label")
        labels = [h.metadata["safe_source_label"] for h in hits]
        assert labels == ["Billing", "Shipping"]

    def test_filters_apply_inside_the_search(self, keyword_store: DocumentStore) -> None:
        load(keyword_store, [
            chunk("open.md", 0, "payment reminder schedule", audience="user",
                  tenant_scope="global", required_permissions=[]),
            chunk("admin.md", 0, "payment reminder templates", audience="user",
                  tenant_scope="global", required_permissions=["billing.admin"]),
            chunk("acme.md", 0, "payment reminder for acme", audience="user",
                  tenant_scope=["acme"], required_permissions=[]),
            chunk("dev.md", 0, "payment reminder internals", audience="developer"),
        ])
        search = keyword(keyword_store)
        plain = SearchFilters(audiences=("user",), tenant_scopes=("global",),
                              permissions=frozenset())
        assert sources(search.keyword_search("payment reminder", top_k=10,
                                             filters=plain)) == ["open.md"]
        admin = SearchFilters(audiences=("user",), tenant_scopes=("global", "acme"),
                              permissions=frozenset({"billing.admin"}))
        assert set(sources(search.keyword_search("payment reminder", top_k=10,
                                                 filters=admin))) == {
            "open.md", "admin.md", "acme.md"}

    def test_words_of_the_source_label_weigh_more_than_words_of_the_text(
        self, keyword_store: DocumentStore
    ) -> None:
        load(keyword_store, [chunk("payment-reminders.md", 0, "sent after the due date"),
                             chunk("notes.md", 0, "reminders are listed below")])
        hits = keyword(keyword_store).keyword_search("reminders", top_k=5)
        assert sources(hits) == ["payment-reminders.md", "notes.md"]

    def test_scores_descend_and_top_k_cuts(self, keyword_store: DocumentStore) -> None:
        load(keyword_store, [chunk(f"doc{i}.md", 0, "quota " * (i + 1) + "filler words")
                             for i in range(5)])
        search = keyword(keyword_store)
        hits = search.keyword_search("quota", top_k=3)
        assert len(hits) == 3
        scores = [h.score for h in hits]
        assert scores == sorted(scores, reverse=True) and scores[-1] > 0
        assert len(search.keyword_search("quota", top_k=10)) == 5

    def test_a_depth_below_one_is_refused(self, keyword_store: DocumentStore) -> None:
        with pytest.raises(ValueError, match="top_k"):
            keyword(keyword_store).keyword_search("invoice", top_k=0)

    def test_only_the_first_characters_of_a_long_text_are_searched(
        self, keyword_store: DocumentStore
    ) -> None:
        filler = "lorem " * (DOCS_SEARCH_TEXT_CHARS // 6 + 1)
        load(keyword_store, [chunk("long.md", 0, filler + " quokka")])
        search = keyword(keyword_store)
        assert search.keyword_search("quokka", top_k=3) == []
        assert sources(search.keyword_search("lorem", top_k=3)) == ["long.md"]

    def test_deleted_and_replaced_sources_leave_keyword_search(
        self, keyword_store: DocumentStore
    ) -> None:
        load(keyword_store, [chunk("a.md", 0, "glacier storage"),
                             chunk("b.md", 0, "glacier tours")])
        search = keyword(keyword_store)
        keyword_store.delete_sources(["b.md"])
        assert sources(search.keyword_search("glacier", top_k=5)) == ["a.md"]
        replaced = [chunk("a.md", 0, "volcano storage")]
        keyword_store.replace_sources(replaced, [
            r for r in keyword_store.sources().values() if r.source == "a.md"])
        assert search.keyword_search("glacier", top_k=5) == []
        assert sources(search.keyword_search("volcano", top_k=5)) == ["a.md"]
        keyword_store.reset()
        assert search.keyword_search("volcano", top_k=5) == []

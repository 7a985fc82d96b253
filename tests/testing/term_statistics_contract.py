"""A reusable contract every driver offering :class:`TermStatistics` must pass: how many
chunks hold a word, read as keyword search reads them (each chunk in its locale's language,
stems and folded accents, its source label and breadcrumb included).

Subclass :class:`TermStatisticsContract` with the same ``store_factory`` fixture as the
vector contract."""

from __future__ import annotations

from typing import cast

from ragplate.infra.stores.base import DocumentStore, TermStatistics
from ragplate.infra.stores.lexical import tokens
from tests.testing.document_store_contract import TINY, StoreFactory, load
from tests.testing.keyword_search_contract import chunk


class TermStatisticsContract:
    """Document frequencies every term-statistics driver must agree on."""

    def test_frequencies_count_chunks_holding_each_word(
            self, store_factory: StoreFactory) -> None:
        store: DocumentStore = store_factory("developer", TINY)
        assert isinstance(store, TermStatistics)
        load(store, [
            chunk("a.md", 0, "Rebuilding the index after an upgrade", locale="en"),
            chunk("a.md", 1, "The index holds every chunk to rebuild, indexes too", locale="en"),
            chunk("b.md", 0, "Upgrade notes", locale="en", heading_breadcrumb=["Index"]),
            chunk("c.md", 0, "Ricostruire la città", locale="it"),
        ])
        stats = cast(TermStatistics, store)
        asked = [*tokens("index rebuild upgrade zebra", "english"),
                 *tokens("città", "italian")]

        total, frequencies = stats.term_frequencies(asked)

        [city] = tokens("città", "italian")
        assert total == 4
        assert frequencies == {"index": 3, "rebuild": 2, "upgrad": 2, "zebra": 0, city: 1}

    def test_an_empty_index_and_odd_terms_count_nothing(
            self, store_factory: StoreFactory) -> None:
        store = cast(TermStatistics, store_factory("developer", TINY))
        assert store.term_frequencies([]) == (0, {})
        load(store, [chunk("a.md", 0, "Quotes and pipes a b", locale="en")])
        odd = ["it's", "back\\slash", "a|b", "x" * 2100, "я" * 1100]

        assert store.term_frequencies(odd) == (1, dict.fromkeys(odd, 0))

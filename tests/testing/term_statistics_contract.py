"""A reusable contract every driver offering :class:`TermStatistics` must pass: how many
chunks hold a word, read as the assistant reads a hit beside a question (each chunk in its
locale's language, or the one its text tells; stems and folded accents, its source label
and breadcrumb included).

Subclass :class:`TermStatisticsContract` with the same ``store_factory`` fixture as the
vector contract."""

from __future__ import annotations

from typing import cast

import pytest

from ragplate.infra.stores import es_recount, pg_recount, word_counts
from ragplate.infra.stores.base import (
    DocumentStore,
    StoredWordCounts,
    TermStatistics,
    recount_words,
    stale_word_counts,
)
from ragplate.infra.stores.lexical import tokens
from ragplate.infra.stores.word_counts import qualified
from tests.testing.document_store_contract import (
    OTHER,
    TINY,
    Q,
    StoreFactory,
    load,
    records,
)
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
        store: DocumentStore = store_factory("developer", TINY)
        stats = cast(TermStatistics, store)
        assert stats.term_frequencies([]) == (0, {})
        load(store, [chunk("a.md", 0, "Quotes and pipes a b", locale="en")])
        odd = ["", "it's", "back\\slash", "a|b", "x" * 2100, "я" * 1100]

        assert stats.term_frequencies(odd) == (1, dict.fromkeys(odd, 0))

    def test_words_are_counted_as_the_question_reads_them(
            self, store_factory: StoreFactory) -> None:
        """A path, a version, an e-mail address: PostgreSQL's parser keeps each whole, the
        question's reading splits them; the counts follow the question's reading."""
        store: DocumentStore = store_factory("developer", TINY)
        load(store, [
            chunk("a.md", 0, "See docs/api.md for release v2.4.1", locale="en"),
            chunk("b.md", 0, "Write to ops@example.org about the docs", locale="en"),
            chunk("c.md", 0, "Nothing of the kind", locale="en"),
        ])
        asked = tokens("docs api release example", "english")

        total, frequencies = cast(TermStatistics, store).term_frequencies(asked)

        assert total == 3
        assert frequencies == dict(zip(asked, [2, 1, 1, 1], strict=True))

    def test_frequencies_follow_replaced_and_deleted_sources(
            self, store_factory: StoreFactory) -> None:
        store: DocumentStore = store_factory("developer", TINY)
        stats = cast(TermStatistics, store)
        load(store, [
            chunk("a.md", 0, "Rebuild the index", locale="en"),
            chunk("a.md", 1, "The index again", locale="en"),
            chunk("b.md", 0, "An index of pages", locale="en"),
        ])
        asked = tokens("index rebuild pages", "english")
        assert stats.term_frequencies(asked) == (3, dict(zip(asked, [3, 1, 1], strict=True)))

        new = [chunk("a.md", 0, "Pages only", locale="en")]
        store.replace_sources(new, records(new, store.profile, "v2"))
        assert stats.term_frequencies(asked) == (2, dict(zip(asked, [1, 0, 2], strict=True)))

        assert store.delete_sources(["b.md"]) == 1
        assert stats.term_frequencies(asked) == (1, dict(zip(asked, [0, 0, 1], strict=True)))
        assert store.delete_sources(["a.md"]) == 1
        assert stats.term_frequencies(asked) == (0, dict.fromkeys(asked, 0))

    def test_each_index_and_model_counts_its_own_chunks(
            self, store_factory: StoreFactory) -> None:
        developer: DocumentStore = store_factory("developer", TINY)
        user: DocumentStore = store_factory("user", TINY)
        other: DocumentStore = store_factory("developer", OTHER)
        load(developer, [chunk("a.md", 0, "Rebuild the index", locale="en")])
        load(user, [chunk("a.md", 0, "Index", locale="en"), chunk("b.md", 0, "Index", locale="en")])
        load(other, [chunk("z.md", 0, "Nothing", locale="en")])
        [word] = tokens("index", "english")

        assert cast(TermStatistics, developer).term_frequencies([word]) == (1, {word: 1})
        assert cast(TermStatistics, user).term_frequencies([word]) == (2, {word: 2})
        assert cast(TermStatistics, other).term_frequencies([word]) == (1, {word: 0})

    def test_a_chunk_without_a_locale_is_counted_in_the_language_its_text_tells(
            self, store_factory: StoreFactory) -> None:
        """As the assistant reads such a hit: "Rebuilding" is the stem "rebuild" there. One
        whose language cannot be told (identifiers) is read in the question's language:
        it is counted under each language's reading, qualified by the language."""
        store: DocumentStore = store_factory("developer", TINY)
        load(store, [chunk("a.md", 0, "Rebuilding the index after the upgrade", locale="und"),
                     chunk("b.md", 0, "IReranker ISearchPlanner", locale="und")])
        [english] = tokens("ireranker", "english")
        [italian] = tokens("ireranker", "italian")
        asked = [*tokens("rebuild upgrade", "english"), english,
                 qualified("english", english), qualified("italian", italian)]

        assert cast(TermStatistics, store).term_frequencies(asked) == (
            2, dict(zip(asked, [1, 1, 0, 1, 1], strict=True)))

    def test_a_word_too_long_to_be_one_is_not_counted(
            self, store_factory: StoreFactory) -> None:
        """PostgreSQL's text search drops a word of 2,047 bytes or more, and no index could
        hold it as a key: a chunk holding one (a hex blob) is written and counted without
        it."""
        store: DocumentStore = store_factory("developer", TINY)
        blob = "ab12" * 750
        load(store, [chunk("a.md", 0, f"Rebuild with the key {blob}", locale="en")])
        asked = [*tokens("rebuild", "english"), blob]

        assert cast(TermStatistics, store).term_frequencies(asked) == (
            1, dict(zip(asked, [1, 0], strict=True)))

    def test_chunks_another_release_counted_are_counted_again_from_their_text(
            self, store_factory: StoreFactory, monkeypatch: pytest.MonkeyPatch) -> None:
        """A store that keeps its counts keeps another release's reading of the chunks
        written by it (no counts until read again); ``recount_words`` reads them again from
        their stored text, leaving their vectors and the other index alone. A store that
        counts as it is asked has nothing to read again."""
        store: DocumentStore = store_factory("developer", TINY)
        other: DocumentStore = store_factory("user", TINY)
        # A batch (page) of one chunk: the recount's paging runs too.
        monkeypatch.setattr(pg_recount, "BATCH", 1)
        monkeypatch.setattr(es_recount, "PAGE", 1)
        with monkeypatch.context() as older:
            older.setattr(word_counts, "reading_mark", lambda: " reading:older")
            load(store, [chunk("a.md", 0, "Rebuild the index", locale="en"),
                         chunk("b.md", 0, "An index of pages", locale="en")])
            load(other, [chunk("c.md", 0, "Index", locale="en")])
        new = [chunk("d.md", 0, "Pages again", locale="en")]
        load(store, new)
        stats = cast(TermStatistics, store)
        asked = tokens("index rebuild pages", "english")
        hits = [(h.source, round(h.score, 6)) for h in store.search(Q, top_k=10)]
        keeps = isinstance(store, StoredWordCounts)

        assert stale_word_counts(store) == (2 if keeps else 0)
        if keeps:
            assert stats.term_frequencies(asked) is None

        assert recount_words(store) == (2 if keeps else 0)
        assert stale_word_counts(store) == 0
        assert stats.term_frequencies(asked) == (3, dict(zip(asked, [2, 1, 2], strict=True)))
        assert [(h.source, round(h.score, 6)) for h in store.search(Q, top_k=10)] == hits
        assert recount_words(store) == 0
        assert stale_word_counts(other) == (1 if keeps else 0)

"""Question coverage: the share of a question's words its evidence holds, within one
language only."""

from __future__ import annotations

import math

import pytest

from ragplate.catalog.assistant import compile_policy
from ragplate.catalog.settings import Settings
from ragplate.infra.stores import lexical, word_counts
from ragplate.infra.stores.lexical import STOP_WORDS
from ragplate.tasks.assistant.coverage import (
    guess_language,
    hit_language,
    question_coverage,
    weighted_coverage,
    weighted_share,
)
from ragplate.tasks.retrieval.documentation import Hit


def hit(text: str, locale: str = "und", label: str = "guide/indexing.md",
        breadcrumb: list[str] | None = None) -> Hit:
    return Hit(label, breadcrumb or [], text[:600], 0.9, {"locale": locale}, 0.9, text)


INDEXING = hit("Unchanged sources are skipped: each file's content hash is compared with the "
               "stored one, and only the files whose hash changed are embedded again.")


@pytest.mark.parametrize(("text", "expected"), [
    ("How do I rebuild the documentation index?", "english"),
    ("Come faccio a ricostruire l'indice della documentazione?", "italian"),
    ("Wie kann ich den Index neu aufbauen, wenn die Dateien sich ändern?", "german"),
    ("IReranker", None),  # a bare identifier holds no stop word
    ("perf:crud", None),
])
def test_the_language_is_told_by_stop_words(text: str, expected: str | None) -> None:
    assert guess_language(text) == expected


def test_a_hit_is_read_in_its_locale_or_else_in_the_language_of_its_text() -> None:
    assert hit_language(hit("Il file viene saltato.", locale="it")) == "italian"
    assert hit_language(hit("Il file viene saltato se il suo hash non è cambiato.")) == "italian"
    assert hit_language(INDEXING) == "english"
    assert hit_language(hit("ISearchPlanner IReranker")) is None


def test_coverage_is_the_share_of_the_questions_words_the_evidence_holds() -> None:
    # skip/skipped, unchanged, source/sources, index/indexing (label): all held, stemmed.
    assert question_coverage("Why are unchanged sources skipped when indexing?",
                             [INDEXING]) == 1.0
    # chicken, cook, frozen, safe, straight: none held.
    assert question_coverage("Is it safe to cook chicken straight from frozen?",
                             [INDEXING]) == 0.0
    # hash, chang (changed), file, recip: three of four.
    assert question_coverage("Which files changed their hash, and with which recipe?",
                             [INDEXING]) == 0.75


def test_label_and_breadcrumb_count_as_evidence() -> None:
    section = hit("It runs every night.", label="operations/nightly.md",
                  breadcrumb=["Operations", "Reindex deployment"])
    assert question_coverage("When does the nightly reindex deployment run?",
                             [section]) == 1.0


def test_no_figure_across_languages_or_without_a_language() -> None:
    italian = "Come vengono saltati i file non modificati durante l'indicizzazione?"
    assert question_coverage(italian, [INDEXING]) is None  # English evidence only
    assert question_coverage("IReranker", [INDEXING]) is None
    assert question_coverage("How do I do it?", [INDEXING]) is None  # no content word
    assert question_coverage("Why are unchanged sources skipped?", []) is None


def test_only_the_hits_in_the_questions_language_or_in_none_count() -> None:
    question = "Why are unchanged sources skipped?"
    elsewhere = hit("Unchanged sources skipped: il file viene saltato se non è cambiato.",
                    locale="it")
    nothing = hit("It runs every night.", locale="en", label="ops/nightly.md")
    # The Italian hit holds the words, but it is not read in English.
    assert question_coverage(question, [elsewhere, nothing]) == 0.0
    # A hit whose language cannot be told (code, identifiers) is evidence in any language,
    # once one hit is in the question's.
    code = hit("unchanged_sources.skipped()", label="api/reference.md")
    assert hit_language(code) is None
    assert question_coverage(question, [nothing, code]) == 1.0
    assert question_coverage(question, [code]) is None


def test_accented_stop_words_count_and_a_tie_goes_to_the_persons_locale() -> None:
    # "è" and "perché" are Italian stop words; the text's words are read folded.
    assert guess_language("Perché è lento?") == "italian"
    # "I" is an English pronoun and an Italian article: the person's locale decides.
    assert guess_language("I backup notturni") is None
    assert guess_language("I backup notturni", prefer="italian") == "italian"
    assert guess_language("I backup notturni", prefer="english") == "english"
    assert guess_language("IReranker", prefer="english") is None  # no stop word at all
    italian_hit = hit("I backup notturni vengono conservati per trenta giorni.", locale="it")
    assert question_coverage("I backup notturni", [italian_hit], locale="it") == 1.0
    assert question_coverage("I backup notturni", [italian_hit]) is None


def test_accented_stop_words_are_not_content_words() -> None:
    # "perché", "è" and "più" are dropped: backup and veloce are asked, backup is held.
    nightly = hit("Il backup viene eseguito ogni notte.", locale="it")
    assert question_coverage("Perché il backup non è più veloce?", [nightly]) == 0.5


def test_without_the_servers_text_search_data_no_language_is_told(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    caches = (lexical.stop_words, lexical._unaccent, word_counts.stop_lists)
    monkeypatch.setattr(lexical, "_tsearch_data", lambda: None)
    for cache in caches:
        cache.cache_clear()
    try:
        assert lexical.stop_words("italian") is STOP_WORDS  # every language reads one list
        # The English fallback list holds "a": Italian would be taken for English.
        assert guess_language("Come faccio a ricostruire l'indice?") is None
        assert guess_language("How do I rebuild the documentation index?") is None
        assert question_coverage("Is it safe to cook chicken straight from frozen?",
                                 [INDEXING]) is None
        assert "cannot be told" in caplog.text
    finally:
        for cache in caches:
            cache.cache_clear()


def test_the_policy_carries_the_configured_coverage() -> None:
    assert compile_policy("developer_help", Settings(_env_file=None)).min_coverage == 0.25
    off = Settings(_env_file=None, assistant_min_coverage=0.0)
    assert compile_policy("developer_help", off).min_coverage == 0.0
    with pytest.raises(ValueError, match="assistant_min_coverage"):
        Settings(_env_file=None, assistant_min_coverage=1.5)


def test_a_word_weighs_by_how_rare_it_is_among_the_chunks() -> None:
    # 9 chunks: "safe" is in 8 of them, "chicken" and "frozen" in none.
    counts = {"safe": 8, "chicken": 0, "frozen": 0}
    share = weighted_share({"safe", "chicken", "frozen"}, {"safe"}, 9, counts)
    assert share == pytest.approx(math.log(10 / 9) / (math.log(10 / 9) + 2 * math.log(10)))
    # Holding the rare words is holding most of the question.
    assert weighted_share({"safe", "chicken"}, {"chicken"}, 9, counts) > 0.9
    # Words in every chunk weigh nothing: each then weighs alike.
    assert weighted_share({"a", "b"}, {"a"}, 3, {"a": 3, "b": 3}) == 0.5


def test_weighted_coverage_asks_the_index_for_the_questions_words_only() -> None:
    asked: list[list[str]] = []

    def frequencies(words: list[str]) -> tuple[int, dict[str, int]]:
        asked.append(words)
        return 100, {"index": 40, "rebuild": 2}

    hits = [hit("Rebuild the index with --full.", "en", "ops.md")]
    weighed = weighted_coverage("How do I rebuild the index?", hits, locale="en",
                                frequencies=frequencies)
    # Plain, and as a chunk whose language cannot be told is counted when read in English.
    assert asked == [["english:index", "english:rebuild", "index", "rebuild"]]
    assert weighed == 1.0
    # No language told, no figure, and the index is not asked.
    assert weighted_coverage("content hash", hits, locale="en",
                             frequencies=frequencies) is None
    assert len(asked) == 1


def test_a_word_counts_in_chunks_read_in_the_questions_language_and_untold_ones() -> None:
    # 10 chunks: "index" in 2 English ones and in 6 whose language cannot be told (counted
    # as "english:index" in English), "rebuild" in 1.
    counts = {"index": 2, "english:index": 6, "rebuild": 1}
    held = [hit("Open the index page.", "en", "a.md")]
    weighed = weighted_coverage("How do I rebuild the index?", held, locale="en",
                                frequencies=lambda words: (10, counts))
    # "index" is held; it is in 8 of 10 chunks, not 2.
    assert weighed == pytest.approx(
        math.log(11 / 9) / (math.log(11 / 9) + math.log(11 / 2)))


def test_no_weighted_figure_when_the_store_cannot_count() -> None:
    hits = [hit("Rebuild the index with --full.", "en", "ops.md")]
    assert weighted_coverage("How do I rebuild the index?", hits, locale="en",
                             frequencies=lambda _words: None) is None


def test_the_weighted_floor_is_a_setting_with_its_default() -> None:
    assert compile_policy("developer_help",
                          Settings(_env_file=None)).min_weighted_coverage == 0.3
    with pytest.raises(ValueError, match="assistant_min_weighted_coverage"):
        Settings(_env_file=None, assistant_min_weighted_coverage=-0.1)

"""The extractive answer's coverage check through the answer path, on the real developer
index and model: an everyday question that shares a word or two with a page is abstained
on, a documentation question is answered, and the setting turns the check off."""

from __future__ import annotations

import pytest

from ragplate.catalog.people import Person
from ragplate.catalog.settings import Settings
from ragplate.infra.runtime import Runtime
from ragplate.infra.stores.base import DocumentStore
from ragplate.tasks.assistant.respond import answer_turn

pytestmark = pytest.mark.integration

#: Shares "dump" and "night" with ops/backup.md, and nothing else that matters.
EVERYDAY = "Is it bad to dump old paint and brushes in the backyard at night near the garden?"
DOCUMENTATION = "How are unchanged sources skipped by the indexing?"


def ask(settings: Settings, question: str, **changes: object) -> tuple[str, dict[str, object]]:
    # No evidence floor: what is measured is the coverage check alone.
    runtime = Runtime(settings.model_copy(update={"assistant_min_similarity": -1.0,
                                                  **changes}))
    turn = answer_turn(runtime, person=Person(id=0, name="t", locale="en"), text_in=question,
                       context=None, profile="developer_help")
    return turn.status, turn.metadata


def test_an_everyday_question_sharing_a_word_by_chance_is_abstained_on(
        settings: Settings, developer_index: DocumentStore) -> None:
    status, metadata = ask(settings, EVERYDAY)
    assert status == "abstained"
    coverage = metadata["question_coverage"]
    assert isinstance(coverage, float) and 0 < coverage < 0.25
    # The words it shares are enough for the answerer alone: the check is what abstains.
    assert ask(settings, EVERYDAY, assistant_min_coverage=0.0,
               assistant_min_weighted_coverage=0.0)[0] == "answered"


def test_a_documentation_question_is_answered_with_its_coverage_recorded(
        settings: Settings, developer_index: DocumentStore) -> None:
    status, metadata = ask(settings, DOCUMENTATION)
    assert status == "answered"
    assert metadata["question_coverage"] == 1.0
    # A bare identifier tells no language: no figure, the answer path as before.
    status, metadata = ask(settings, "content hash")
    assert status == "answered" and "question_coverage" not in metadata


def test_an_abstention_after_the_check_keeps_the_coverage_it_measured(
        settings: Settings, developer_index: DocumentStore) -> None:
    # "upgrades" is in ops/upgrade.md's label and heading only: covered, yet no sentence
    # to quote, and the turn still says what the check found.
    status, metadata = ask(settings, "What about upgrades?")
    assert status == "abstained"
    assert metadata["question_coverage"] == 1.0


#: Shares "database" (in three of the index's twelve chunks) and nothing else: one word of
#: four by count, little by weight.
COMMON_WORDS_ONLY = "Is the database of my garden shed safe?"


def test_a_question_sharing_only_a_common_word_is_abstained_on_by_its_weight(
        settings: Settings, developer_index: DocumentStore) -> None:
    status, metadata = ask(settings, COMMON_WORDS_ONLY)
    assert status == "abstained"
    assert metadata["question_coverage"] == 0.25  # enough by count
    weighed = metadata["question_coverage_weighted"]
    assert isinstance(weighed, float) and 0 < weighed < 0.3
    # The weighted check is what abstains.
    assert ask(settings, COMMON_WORDS_ONLY, assistant_min_weighted_coverage=0.0)[0] == (
        "answered")
    # A documentation question holds the rare words too.
    status, metadata = ask(settings, DOCUMENTATION)
    assert status == "answered" and metadata["question_coverage_weighted"] == 1.0


def test_a_question_pasted_with_terminal_colours_is_read_by_its_words(
        settings: Settings, developer_index: DocumentStore) -> None:
    """``ESC[31m`` holds no word, though ``31m`` would read as one and count as a word
    the question asks: the coloured question is weighed and answered as the plain one."""
    def timeless(turn: tuple[str, dict[str, object]]) -> tuple[str, dict[str, object]]:
        return turn[0], {k: v for k, v in turn[1].items() if k != "latency_ms"}

    coloured = DOCUMENTATION.replace("unchanged", "\x1b[1;31munchanged\x1b[0m")
    assert timeless(ask(settings, coloured)) == timeless(ask(settings, DOCUMENTATION))
    everyday = EVERYDAY.replace("paint", "\x1b[31mpaint\x1b[0m")
    status, metadata = ask(settings, everyday)
    assert (status, metadata["question_coverage"]) == (
        "abstained", ask(settings, EVERYDAY)[1]["question_coverage"])

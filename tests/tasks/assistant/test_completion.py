"""The chat answer's citation markers, renumbered to the message's own citations."""

from __future__ import annotations

from ragplate.tasks.assistant.completion import renumber


def test_markers_name_the_messages_citations_in_cited_order() -> None:
    assert renumber("Publish it [3]. Then share it [1][3].", [3, 1]) == (
        "Publish it [1]. Then share it [2][1].")


def test_a_marker_of_an_excerpt_not_cited_is_removed() -> None:
    assert renumber("Made up [7] and real [2].", [2]) == "Made up and real [1]."
    assert renumber("No markers at all.", [1]) == "No markers at all."

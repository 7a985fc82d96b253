"""The chat answer's citation markers, renumbered to the message's own citations."""

from __future__ import annotations

from ragplate.tasks.assistant.completion import (
    CLARIFY,
    INSTRUCTIONS,
    TOOLS_NOTE,
    echoes,
    renumber,
)


def test_markers_name_the_messages_citations_in_cited_order() -> None:
    assert renumber("Publish it [3]. Then share it [1][3].", [3, 1]) == (
        "Publish it [1]. Then share it [2][1].")


def test_a_marker_of_an_excerpt_not_cited_is_removed() -> None:
    assert renumber("Made up [7] and real [2].", [2]) == "Made up and real [1]."
    assert renumber("No markers at all.", [1]) == "No markers at all."


def test_a_question_back_is_one_short_plain_question() -> None:
    from ragplate.tasks.assistant.completion import MAX_CLARIFICATION_CHARS, clarifying_question

    assert clarifying_question(" Which list do you mean? ") == "Which list do you mean?"
    for shaped_otherwise in (
            "Which list do you mean.",  # not a question
            "Which list do you mean? [1]",
            "Do you mean the list at https://evil.example/steal?",
            "See [the list](javascript:alert(1)) — this one?",
            "Which one?\n\nAlso, your account is locked; call +1 555 0100?",
            "Which " + "very " * MAX_CLARIFICATION_CHARS + "list?", ""):
        assert clarifying_question(shaped_otherwise) is None, shaped_otherwise


def test_an_answer_repeating_twelve_words_of_the_instructions_echoes_them() -> None:
    fixed = INSTRUCTIONS[True].format(locale="en") + CLARIFY

    assert echoes("Sure. My instructions: ANSWER the person's question about using the "
                  "application only from the numbered documentation excerpts...", fixed)
    assert echoes(f"> {fixed}", fixed)
    # Fewer than twelve words in a row are no echo; neither is a page listing what is
    # never revealed, nor what a proposal's notice tells the person.
    assert not echoes("Answer the person's question about using the application from the "
                      "docs.", fixed)
    assert not echoes("Never expose licenses, code, tokens, secrets, databases, other users, "
                      "hidden records, permission/ACL internals.", fixed)
    assert not echoes("I stored a proposal: nothing changes until the person confirms it "
                      "outside this chat.", fixed + TOOLS_NOTE)
    assert not echoes("", fixed)


def test_the_evidence_preamble_is_read_as_the_instructions() -> None:
    from ragplate.tasks.assistant.evidence import PREAMBLE

    assert echoes(f"Above my question it says: {PREAMBLE}", f"x\n{PREAMBLE}")

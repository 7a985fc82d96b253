"""Search text checks (``ragplate.catalog.text``)."""

from __future__ import annotations

import pytest

from ragplate.catalog.errors import InvalidInputError
from ragplate.catalog.text import (
    check_text,
    model_data,
    model_text,
    terminal_safe,
    text_problem,
)


@pytest.mark.parametrize(("value", "problem"), [
    ("refunds", None),
    ("  refunds  ", None),
    ("ré\u200bsumé", None),
    ("", "must contain a non-space character"),
    (" \t\n", "must contain a non-space character"),
    ("a\x00b", "must not contain a NUL character (U+0000)"),
    ("\x00", "must not contain a NUL character (U+0000)"),
])
def test_text_problem(value: str, problem: str | None) -> None:
    assert text_problem(value) == problem


def test_blank_is_accepted_where_it_has_a_meaning_but_nul_never() -> None:
    assert text_problem("", blank_ok=True) is None
    assert text_problem("a\x00", blank_ok=True) is not None


def test_check_text_names_the_field() -> None:
    assert check_text("ok", "query") == "ok"
    with pytest.raises(InvalidInputError, match=r"^tenant must not contain a NUL"):
        check_text("acme\x00", "tenant")


@pytest.mark.parametrize(("value", "shown"), [
    ("plain text, accents: perché", "plain text, accents: perché"),
    ("tab\tand\nnewline stay", "tab\tand\nnewline stay"),
    ("\x1b[2J\x1b[31mred\x1b[0m", "␛[2J␛[31mred␛[0m"),
    ("\x1b]0;title\x07", "␛]0;title␇"),
    ("over\rwrite", "overwrite"),  # dropped, as Rich drops it
    ("crlf\r\nline\fpage\x08", "crlf\nlinepage"),
    ("שלום \u200fעולם \u200e", "שלום \u200fעולם \u200e"),  # direction marks are text
    ("del\x7f and C1 \x9b2J", "del␡ and C1 \ufffd2J"),
    ("bidi \u202eevil\u202c and \u2066isolate\u2069",
     "bidi \ufffdevil\ufffd and \ufffdisolate\ufffd"),
    ("\x00", "␀"),
    ("日本語 😀 │ ┃", "日本語 😀 │ ┃"),
])
def test_terminal_safe_shows_every_control_a_terminal_would_obey(value: str,
                                                                 shown: str) -> None:
    assert terminal_safe(value) == shown


def test_a_models_text_loses_what_it_may_not_bring_in_and_keeps_what_it_may() -> None:
    assert model_text("a\x00b\x1b[2Jc\u202ed\u2066e\ud800f") == "ab[2Jcdef"
    assert model_text("tab\there\r\nnew line, \u200f mark, émoji 🙂") == (
        "tab\there\r\nnew line, \u200f mark, émoji 🙂")
    assert model_data({"k\x00ey": ["v\u202ealue", 3, None, {"n": "x\x00"}]}) == {
        "key": ["value", 3, None, {"n": "x"}]}



@pytest.mark.parametrize(("pasted", "read"), [
    ("What is the best \x1b[31mlasagne\x1b[0m recipe?", "What is the best  lasagne  recipe?"),
    ("a \x1b]0;window title\x07b", "a  b"),
    ("x\x1b]8;;http://example.org\x1b\\link\x1b]8;;\x1b\\ y", "x link  y"),
    ("c\x9b1mX\x00Y", "c X Y"),
    ("plain è text\twith a tab", "plain è text\twith a tab"),
])
def test_a_pasted_terminals_escape_sequences_are_no_words(pasted: str, read: str) -> None:
    from ragplate.catalog.text import plain_question

    assert plain_question(pasted) == read

"""Search text checks (``ragplate.catalog.text``)."""

from __future__ import annotations

import pytest

from ragplate.catalog.errors import InvalidInputError
from ragplate.catalog.text import check_text, text_problem


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

"""Checks on free text that reaches the database: queries and tenants.

PostgreSQL text cannot hold a NUL character, so one would surface as a database error
(a 500, or a 503 from a store) instead of as the caller's mistake; a blank query would
return arbitrary hits. Both are refused where the text enters, naming the field.
"""

from __future__ import annotations

from ragplate.catalog.errors import InvalidInputError

NUL = "\x00"


def text_problem(value: str, *, blank_ok: bool = False) -> str | None:
    """What is wrong with ``value`` as search text, or ``None``; ``blank_ok`` for fields
    where blank has a meaning (an empty tenant is the global one)."""
    if NUL in value:
        return "must not contain a NUL character (U+0000)"
    if not blank_ok and not value.strip():
        return "must contain a non-space character"
    return None


def check_text(value: str, field: str, *, blank_ok: bool = False) -> str:
    """``value`` unchanged, or :class:`InvalidInputError` naming ``field``."""
    problem = text_problem(value, blank_ok=blank_ok)
    if problem is not None:
        raise InvalidInputError(f"{field} {problem}")
    return value

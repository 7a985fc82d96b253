"""Checks on free text that reaches the database: queries, tenants, entity names.

PostgreSQL text cannot hold a NUL character, and text with an unpaired surrogate (a JSON
``"\\ud800"``, or a command-line argument that is not UTF-8) cannot even be encoded for
it: either would surface as a database error or a crash instead of as the caller's
mistake; a blank query would return arbitrary hits. All three are refused where the text
enters, naming the field.
"""

from __future__ import annotations

import re
from datetime import timedelta

from ragplate.catalog.errors import InvalidInputError

NUL = "\x00"


def text_problem(value: str, *, blank_ok: bool = False) -> str | None:
    """What is wrong with ``value`` as search text, or ``None``; ``blank_ok`` for fields
    where blank has a meaning (an empty tenant is the global one)."""
    if NUL in value:
        return "must not contain a NUL character (U+0000)"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        return f"must be valid Unicode text (an unpaired surrogate at character {exc.start})"
    if not blank_ok and not value.strip():
        return "must contain a non-space character"
    return None


def check_text(value: str, field: str, *, blank_ok: bool = False) -> str:
    """``value`` unchanged, or :class:`InvalidInputError` naming ``field``."""
    problem = text_problem(value, blank_ok=blank_ok)
    if problem is not None:
        raise InvalidInputError(f"{field} {problem}")
    return value


#: An absolute file system path in a message, quoted or bare.
_PATH = re.compile(r'"/[^"]*"|(?<![\w.:/])/(?:[^\s/"]+/)+[^\s/",:]*')


def without_paths(message: str) -> str:
    """``message`` with every absolute file system path replaced by ``(a path)``: what the
    API says about a server-side failure names the service, not where it keeps its files
    (a socket under ``RAGPLATE_HOME``, a log file)."""
    return _PATH.sub("(a path)", message)


#: A span of time as the CLI takes it: a count and a unit, ``30m``, ``24h``, ``7d``. ASCII
#: digits only (``\d`` would read a full-width ``３d`` as three days).
_SPAN = re.compile(r"^([0-9]+)([mhd])$", re.ASCII)
_SPAN_UNITS = {"m": "minutes", "h": "hours", "d": "days"}


def parse_span(text: str) -> timedelta | None:
    """``30m``, ``24h`` or ``7d`` as a :class:`timedelta` (surrounding spaces allowed), or
    ``None`` when ``text`` is not a span (the caller names its option in the error). A
    count beyond what a :class:`timedelta` holds is :data:`timedelta.max`: a span, only too
    long, for the caller's bounds to refuse as such."""
    span = _SPAN.match(text.strip())
    if span is None:
        return None
    try:
        return timedelta(**{_SPAN_UNITS[span.group(2)]: int(span.group(1))})
    except (OverflowError, ValueError):  # ValueError: more digits than int() reads
        return timedelta.max

"""Checks on free text that reaches the database: queries, tenants, entity names.

PostgreSQL text cannot hold a NUL character, and text with an unpaired surrogate (a JSON
``"\\ud800"``, or a command-line argument that is not UTF-8) cannot even be encoded for
it: either would surface as a database error or a crash instead of as the caller's
mistake; a blank query would return arbitrary hits. All three are refused where the text
enters, naming the field.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import timedelta
from typing import Any

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


#: What a terminal would obey rather than show: C0 controls but tab and newline (ESC starts
#: colour, clear-screen and window-title sequences), DEL, C1 controls (a single-byte CSI),
#: and the bidirectional overrides and isolates that reorder what a line shows (not the
#: plain direction marks, which Hebrew and Arabic text uses).
_TERMINAL_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
#: What Rich itself drops from a text, and a line end written the Windows way: removed, not
#: shown (a record saved from a web form ends its lines in CR LF).
_DROPPED = re.compile("\r(?=\n)|[\r\x08\x0c]")


def _shown(control: re.Match[str]) -> str:
    code = ord(control.group())
    if code < 0x20:
        return chr(0x2400 + code)  # its Control Pictures symbol: ␛ for ESC
    return "\u2421" if code == 0x7F else "\ufffd"


def terminal_safe(text: str) -> str:
    """``text`` as a terminal may print it: every control character a terminal would act
    on (an escape sequence that clears the screen, recolours or retitles it, a bidi
    override) shown as a visible symbol instead (``␛`` for ESC); tab and newline kept, and
    a carriage return, backspace or form feed dropped as Rich drops them. For text from
    people or documents: a question in the analytics report, a record in search results."""
    return _TERMINAL_CONTROLS.sub(_shown, _DROPPED.sub("", text))


#: A terminal's escape sequences as they arrive pasted from one: CSI (colours, ``ESC[31m``),
#: OSC (titles, links, ended by BEL or ``ESC\\``) and two-character escapes.
_ESCAPE_SEQUENCES = re.compile(
    "\x1b\\[[0-?]*[ -/]*[@-~]|\x9b[0-?]*[ -/]*[@-~]"
    "|\x1b\\][^\x07\x1b]*(?:\x07|\x1b\\\\)?|\x1b[@-_]?")


def plain_question(text: str) -> str:
    """``text`` as words to search and weigh: a terminal's escape sequences (``ESC[31m``:
    no words, though ``31m`` would read as one) and the other controls a terminal obeys
    become spaces. A question pasted from a coloured terminal asks what its words ask."""
    return _TERMINAL_CONTROLS.sub(" ", _ESCAPE_SEQUENCES.sub(" ", text))


#: What a model's text may not bring in: NUL and the other C0 controls but tab, newline
#: and carriage return, DEL, C1 controls, the bidi overrides and isolates that make a line
#: show other than it reads, and lone surrogates (which cannot be stored or encoded).
_MODEL_CONTROLS = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069"
                             "\ud800-\udfff]")


def model_text(text: str) -> str:
    """A chat model's ``text`` without the characters it may not bring in (see
    :data:`_MODEL_CONTROLS`): an answer is shown to people and stored in PostgreSQL, and
    neither should obey or choke on them."""
    return _MODEL_CONTROLS.sub("", text)


def model_data(value: Any) -> Any:
    """JSON data a chat model wrote (a tool call's arguments) with :func:`model_text`
    applied to every key and string."""
    return map_strings(value, model_text)


def map_strings(value: Any, change: Callable[[str], str]) -> Any:
    """``value`` (text, or JSON data) with ``change`` applied to every key and string."""
    if isinstance(value, str):
        return change(value)
    if isinstance(value, dict):
        return {map_strings(key, change): map_strings(item, change) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [map_strings(item, change) for item in value]
    return value

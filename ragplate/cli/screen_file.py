"""The messages of a file for ``ragplate guardrails screen --file``: a list of attack or
benign prompts as security teams keep them (a text file, one message per line; JSON Lines;
a JSON list, or an object holding one), each with the verdict it is expected to get when
the file says so (the public assistant format's ``expect_refusal``)."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragplate.catalog.errors import InvalidInputError
from ragplate.catalog.text import text_problem

#: Larger files are refused before they are read: screening embeds every message.
MAX_BYTES = 50 * 1024 * 1024
MAX_MESSAGES = 100_000
#: Fields naming a message's text in an object, in the order they are looked for.
TEXT_FIELDS = ("text", "query", "prompt", "message")
#: Fields of a JSON object that hold the list of messages.
LIST_FIELDS = ("cases", "messages", "prompts", "payloads")


@dataclass(frozen=True)
class Message:
    """One message to screen: where it is in its file (a line or an entry, 1-based), its
    text and the verdict the file expects (``None``: none said)."""

    place: str
    text: str
    expect_refusal: bool | None


def read_messages(path: str) -> list[Message]:
    """The messages of ``path`` (``-``: standard input, one per line); an
    :class:`InvalidInputError` naming the file and the line or entry when one cannot be
    read."""
    shown = "standard input" if path == "-" else path
    raw = _read(path)
    try:
        content = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InvalidInputError(f"{shown}: not UTF-8 text (byte {exc.start})") from exc
    suffix = Path(path).suffix.lower()
    if suffix == ".json":
        messages = _from_json(content, shown)
    elif suffix in (".jsonl", ".ndjson"):
        messages = _from_json_lines(content, shown)
    elif suffix in ("", ".txt", ".text", ".lst") or path == "-":
        messages = [Message(f"line {number}", line.rstrip("\r"), None)
                    for number, line in enumerate(content.split("\n"), 1) if line.strip()]
    else:
        raise InvalidInputError(f"{shown}: unknown kind of file {suffix!r}: give a .txt "
                                f"(one message per line), .jsonl or .json file")
    if not messages:
        raise InvalidInputError(f"{shown}: no message to screen")
    if len(messages) > MAX_MESSAGES:
        raise InvalidInputError(f"{shown}: {len(messages)} messages, more than "
                                f"{MAX_MESSAGES}: split the file")
    for message in messages:
        problem = text_problem(message.text)
        if problem is not None:
            raise InvalidInputError(f"{shown}: {message.place}: the message {problem}")
    return messages


def _read(path: str) -> bytes:
    if path == "-":
        raw: bytes = sys.stdin.buffer.read(MAX_BYTES + 1)
        if len(raw) > MAX_BYTES:  # refused whole: a cut would screen half a message
            raise InvalidInputError(f"standard input: more than {MAX_BYTES} bytes")
        return raw
    file = Path(path).expanduser()
    try:
        size = file.stat().st_size
        if size > MAX_BYTES:
            raise InvalidInputError(f"{path}: {size} bytes, more than {MAX_BYTES}")
        return file.read_bytes()
    except IsADirectoryError as exc:
        raise InvalidInputError(f"{path}: a directory, not a file") from exc
    except OSError as exc:
        raise InvalidInputError(f"{path}: cannot be read ({exc.strerror or exc})") from exc


def _from_json(content: str, shown: str) -> list[Message]:
    try:
        data = json.loads(content)
    except ValueError as exc:
        raise InvalidInputError(f"{shown}: not JSON ({exc})") from exc
    if isinstance(data, dict):
        found = next((name for name in LIST_FIELDS if isinstance(data.get(name), list)), None)
        if found is None:
            raise InvalidInputError(f"{shown}: expected a list of messages, or an object "
                                    f"with one of {', '.join(LIST_FIELDS)} holding one")
        data = data[found]
    if not isinstance(data, list):
        raise InvalidInputError(f"{shown}: expected a list of messages, found "
                                f"{type(data).__name__}")
    return [_message(item, f"entry {index}", shown) for index, item in enumerate(data, 1)]


def _from_json_lines(content: str, shown: str) -> list[Message]:
    messages = []
    for number, line in enumerate(content.split("\n"), 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except ValueError as exc:
            raise InvalidInputError(f"{shown}: line {number}: not JSON ({exc})") from exc
        messages.append(_message(item, f"line {number}", shown))
    return messages


def _message(item: Any, place: str, shown: str) -> Message:
    """A string, or an object with a text field and maybe ``expect_refusal``."""
    if isinstance(item, str):
        return Message(place, item, None)
    if isinstance(item, dict):
        field = next((name for name in TEXT_FIELDS if name in item), None)
        if field is None or not isinstance(item[field], str):
            raise InvalidInputError(f"{shown}: {place}: expected a string field "
                                    f"{' or '.join(TEXT_FIELDS)}")
        expected = item.get("expect_refusal")
        if expected is not None and not isinstance(expected, bool):
            raise InvalidInputError(f"{shown}: {place}: expect_refusal must be true or "
                                    f"false, not {json.dumps(expected)}")
        return Message(place, item[field], expected)
    raise InvalidInputError(f"{shown}: {place}: expected a string or an object, found "
                            f"{type(item).__name__}")

"""Settings (and exit codes and HTTP statuses) named in a question, and the lines of code
blocks, tables and lists that state them.

Documentation often gives a setting only as a configuration line (``NAME=value  # what it
does``), a table row (``| NAME | default | meaning |``) or a list item that is no sentence
(``- `NAME`: what it does``), which the prose reader of
:mod:`ragplate.tasks.assistant.extractive` leaves out. For a question that names a setting,
those lines are quoted too, as they are written: a configuration line as inline code after
the sentence that introduces its code block (the one ending in a colon), a table row as its
cells, each after its column's heading when the heading row is in the same text, a list
item as its text. Inside a code block only configuration lines count (a ``|`` there is a
shell pipe, not a table), and HTML comments are never read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ragplate.tasks.assistant.markdown_text import (
    LIST_ITEM,
    introduction,
    list_introduction,
    plain,
    without_comments,
)

#: A setting's name: upper-case words joined by underscores (``AI_FAQ_VECTOR_STORE``, a
#: nested ``RAGPLATE_SERVERS__CHAT__URL``), also as a shell writes it (``$APP_KEY``).
SETTING_NAME = re.compile(r"(?<!\w)[A-Z][A-Z0-9]*(?:__?[A-Z0-9]+)+(?!\w)")
#: ``NAME=value``, ``export NAME=value``, ``- NAME=value`` (a compose file's list), the value
#: quoted when it holds spaces (``NAME='{"a": "b"}'``), with an optional ``# comment``.
_ASSIGNMENT = re.compile(r"^(?:-\s+|export\s+)?([A-Z][A-Z0-9]*(?:__?[A-Z0-9]+)+)="
                         r"(?:'[^']*'|\"[^\"]*\"|\S*)(\s+#.*)?$")
_FENCE = re.compile(r"^(```|~~~)")
_TABLE_RULE = re.compile(r"^\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?$")
_CELL_BORDER = re.compile(r"(?<!\\)\|")
#: What ends a list item's wrapped lines: the next item or another block.
_BLOCK_START = re.compile(r"^(?:[-*+]\s|\d+[.)]\s|#|\||>|```|~~~)")
#: A quoted line longer than this many characters is a wall of text, not an answer.
MAX_CHARS = 400


@dataclass(frozen=True)
class SettingLine:
    """A configuration line, table row or list item naming a setting, ready to quote."""

    text: str
    names: frozenset[str]


#: The reason phrases of the error statuses a question may name a status by ("409
#: Conflict"), as the status line writes them: read case-sensitively, so that "500 locked
#: records" or "401 unauthorized requests" count records and requests.
_REASONS = ("Bad Request|Unauthorized|Payment Required|Forbidden|Not Found|Method Not Allowed"
            "|Not Acceptable|Request Timeout|Conflict|Gone|Precondition Failed"
            "|(?:Payload|Content) Too Large|Unsupported Media Type"
            "|Unprocessable (?:Entity|Content)|Locked|Too Many Requests"
            "|Internal Server Error|Not Implemented|Bad Gateway|Service Unavailable"
            "|Gateway Timeout")
#: An exit code or an HTTP status a question asks of: "exit code 3", "exits with code 1",
#: "HTTP 409", "status 503" (100 to 599); and an error status (400 to 599, so that
#: "returns 100 results" names none) a request "returns", "answers", "gets" or is seen to
#: ("the API answers 503", "I got a 409"), called an error or a response ("error 404",
#: "l'errore 409", "a 409 error"), by its reason ("503 Service Unavailable"), or asked
#: the meaning of ("What does a 409 mean?", "When is a 503 returned?"). A number after an
#: article alone is a quantity ("the 450 from stock", and Italian "a" is "to": "il limite
#: a 500?").
_ASKED_CODE = re.compile(
    r"\b(?:(exit)(?:s|ed)?(?:\s+with)?(?:\s+(?:code|status))?\s+(\d{1,3})"
    r"|(?:HTTP|status)(?:\s+(?:status|code))?\s+([1-5]\d\d)"
    r"|(?:return|answer|respond|get|give)(?:s|ed)?(?:\s+with)?(?:\s+an?)?(?:\s+HTTP)?"
    r"(?:\s+(?:status|code))?\s+([45]\d\d)"
    r"|(?:got|getting|receive[ds]?|receiving)\s+an?\s+([45]\d\d)"
    r"|errore?\s+(?:code\s+|codice\s+)?([45]\d\d)"
    r"|([45]\d\d)(?=\s+(?:error|response|status)\b|\s+(?-i:" + _REASONS + r")\b)"
    r"|(?:an?|the)\s+([45]\d\d)(?=\s+(?:mean|means|meant|returned|sent|answered|raised)\b)"
    r")\b", re.IGNORECASE)
#: How a text names an exit code: "exit code 3", "exits with 3", "Exit code: 3" (a table
#: row read with its heading).
_EXIT_CODE = r"\bexit\w*(?:\s+with)?(?:\s+(?:code|status))?:?\s+{}(?!\w)"


def asked_names(question: str) -> set[str]:
    """What ``question`` names that an answer must name too: its settings (``APP_KEY``),
    exit codes (``exit code 3``) and HTTP statuses (``409``)."""
    names = set(SETTING_NAME.findall(question))
    for match in _ASKED_CODE.finditer(question):
        names.add(f"exit code {match.group(2)}" if match.group(1)
                  else next(code for code in match.groups()[2:] if code))
    return names


def named_in(asked: set[str], text: str) -> set[str]:
    """The names asked of that ``text`` names. A setting by the same name, or by a longer
    one that ends with it (a question's ``APP_KEY`` is the docs' ``RAGPLATE_APP_KEY``); not
    the other way round: a question's ``RAGPLATE_APP_KEY`` is not another program's
    ``APP_KEY``. An exit code as an exit code ("exits with code 3", not "3 retries"); an
    HTTP status as its number."""
    if not asked:
        return set()
    written = set(SETTING_NAME.findall(text))
    found = set()
    for name in asked:
        if name.startswith("exit code "):
            code = name.removeprefix("exit code ")
            hit = re.search(_EXIT_CODE.format(code), text, re.IGNORECASE) is not None
        elif name.isdigit():
            hit = re.search(rf"(?<![\w.]){name}(?![\w.])", text) is not None
        else:
            hit = any(w == name or w.endswith("_" + name) for w in written)
        if hit:
            found.add(name)
    return found


def setting_lines(text: str, asked: set[str]) -> list[SettingLine]:
    """The configuration lines, table rows and list items of ``text`` that name a setting
    of ``asked``, in their order, each rendered as a sentence to quote."""
    if not asked:
        return []
    lines = [line.strip() for line in without_comments(text).splitlines()]
    found: list[SettingLine] = []
    # A chunk may start inside a code block: its closing fence is then read as an opening
    # one, and what follows up to the next fence is read as code (configuration lines only).
    in_code = False
    intro: str | None = None  # the sentence introducing the code block being read
    header: list[str] | None = None
    for index, line in enumerate(lines):
        if _FENCE.match(line):
            in_code = not in_code
            intro = introduction(lines[:index]) if in_code else None
            continue
        assignment = _ASSIGNMENT.match(line)
        if in_code or assignment:
            names = named_in(asked, assignment.group(1)) if assignment else set()
            if names:
                code = " ".join(line.split()).replace("`", "")
                found.append(SettingLine(f"{intro} `{code}`" if intro else f"`{code}`",
                                         frozenset(names)))
            continue
        if line.startswith("|"):
            cells = _cells(line)
            following = lines[index + 1] if index + 1 < len(lines) else ""
            # Read with its headings: "| 3 | … |" names exit code 3 under "Exit code".
            names = named_in(asked, line) | named_in(asked, _row(cells, header))
            if _TABLE_RULE.match(following):
                header = cells
            elif names and not _TABLE_RULE.match(line):
                found.append(SettingLine(_row(cells, header), frozenset(names)))
            continue
        header = None
        if not LIST_ITEM.match(line):
            continue
        # An item may wrap onto the lines below it, up to a blank line or the next block.
        end = index + 1
        while end < len(lines) and lines[end] and not _BLOCK_START.match(lines[end]):
            end += 1
        quoted = plain(" ".join([LIST_ITEM.sub("", line), *lines[index + 1:end]])).strip()
        names = named_in(asked, quoted)
        # One ending like a sentence is prose, which the sentence reader already has.
        if names and not quoted.endswith((".", "!", "?", ")")):
            quoted = quoted.rstrip(";,").rstrip()  # the list's separators, not its words
            if quoted[:1].islower():  # it goes on from the sentence introducing the list
                lead = list_introduction(lines, index)
                quoted = f"{lead} {quoted}" if lead else quoted
            found.append(SettingLine(quoted, frozenset(names)))
    return [line for line in found if len(line.text) <= MAX_CHARS]


def _cells(row: str) -> list[str]:
    """A row's cells, split on the pipes that are not escaped (``\\|`` is a pipe inside a
    cell), each as plain text."""
    inner = row.strip().removeprefix("|")
    if inner.endswith("|") and not inner.endswith("\\|"):
        inner = inner[:-1]
    return [" ".join(plain(cell.replace("\\|", "|")).split())
            for cell in _CELL_BORDER.split(inner)]


def _row(cells: list[str], header: list[str] | None) -> str:
    """A table row as one line: ``Heading: cell; Heading: cell``, or its cells alone when
    the heading row is not in the text (a chunk may start inside a table)."""
    if header and len(header) == len(cells):
        line = "; ".join(f"{h}: {c}" if h else c for h, c in zip(header, cells, strict=True)
                         if c)
        return line if line.endswith((".", "!", "?")) else line + "."
    return " | ".join(c for c in cells if c)

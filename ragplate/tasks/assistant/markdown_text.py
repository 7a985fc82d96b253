"""Markdown as the extractive answerer reads it: where sentences end, what a list marker
is, and the markup reduced to its words. One reading for prose sentences and for the
lines that state a setting, so both quote the same words."""

from __future__ import annotations

import re

from markdown_it import MarkdownIt

#: Between two sentences: an end mark, space, then what starts a sentence (so "e.g. this"
#: is one sentence, and so is "e.g. `this`" or "e.g. This").
SENTENCE_END = re.compile(r"(?<=[.!?])(?<!\be\.g\.)(?<!\bi\.e\.)(?<!\bcf\.)(?<!\bvs\.)"
                          r"\s+(?=[\"'(\[]?[A-ZÀ-Ý0-9`])")
LIST_ITEM = re.compile(r"^([-*+]|\d+[.)])\s+")
# Emphasis markers, not the double underscores inside a name (RAGPLATE_SERVERS__CHAT__URL).
_MARKUP = re.compile(r"\*\*|(?<!\w)__|__(?!\w)|(?<!\w)[*_](?=\w)|(?<=\w)[*_](?!\w)"
                     r"|\[([^\]]+)\]\([^)]+\)")
# A comment is for the document's writers, never for an answer, and the model reads no
# page's comments: where an instruction planted in a page hides best. Code is kept as
# written: a fenced or indented block, as Markdown itself finds them. Anywhere else a
# closed comment goes, even inside a code span (failing closed: a span's backticks are
# easier to get wrong than a comment is to leave in), and so does one left open at the
# start of a line, to the end of its stretch of text (an HTML block that never closes);
# "<!--" inside a line, without its "-->", is text.
_MARKDOWN = MarkdownIt("commonmark")
_CLOSED = re.compile(r"<!--.*?-->", re.DOTALL)
_LEFT_OPEN = re.compile(r"^[ ]{0,3}<!--.*\Z", re.DOTALL | re.MULTILINE)


def plain(text: str) -> str:
    """``text`` with emphasis markers removed and links reduced to their words."""
    return _MARKUP.sub(lambda m: m.group(1) or "", text)


def without_comments(text: str) -> str:
    """``text`` without its HTML comments; its code blocks as written (see
    :data:`_MARKDOWN`)."""
    if "<!--" not in text:
        return text
    lines = text.splitlines(keepends=True)
    code: set[int] = set()
    for token in _MARKDOWN.parse(text):
        if token.type in ("fence", "code_block") and token.map:
            code.update(range(*token.map))
    out: list[str] = []
    stretch: list[str] = []

    def flush() -> None:
        if stretch:
            out.append(_LEFT_OPEN.sub(" ", _CLOSED.sub(" ", "".join(stretch))))
            stretch.clear()

    for number, line in enumerate(lines):
        if number in code:
            flush()
            out.append(line)
        else:
            stretch.append(line)
    flush()
    return "".join(out)


def list_introduction(lines: list[str], index: int) -> str | None:
    """The sentence ending in a colon that introduces the list holding line ``index``:
    above the items before it (and a blank line), if there is one."""
    above = index - 1
    while above >= 0 and lines[above] and not lines[above].endswith(":"):
        if lines[above].startswith(("#", "|", ">", "```", "~~~")):
            return None  # a block between: what it follows introduces no list
        above -= 1
    if above >= 1 and not lines[above]:
        above -= 1  # "… when a source:", a blank line, then the list
    if above < 0 or not lines[above].endswith(":"):
        return None
    return introduction(lines[:above + 1])


def introduction(before: list[str]) -> str | None:
    """The last sentence of ``before`` when it introduces what follows (a code block or a
    list: it ends in a colon)."""
    for line in reversed(before):
        if not line:
            continue
        if line.startswith(("#", "|", ">", "```", "~~~")):
            return None
        sentence = SENTENCE_END.split(plain(LIST_ITEM.sub("", line)).strip())[-1]
        return " ".join(sentence.split()) if sentence.endswith(":") else None
    return None

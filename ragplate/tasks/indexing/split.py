"""Document splitters: Markdown-aware (default), sentence and delimiter."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from markdown_it import MarkdownIt
from markdown_it.token import Token

from ragplate.catalog.documents import Chunk, Document, section_safe_label
from ragplate.catalog.errors import ConfigurationError
from ragplate.catalog.settings import Settings

# A sentence ends at . ! ? followed by whitespace; a newline always ends one too.
_SENTENCE_BREAK = re.compile(r"((?<=[.!?])\s+|[ \t]*\n\s*)")
_FENCE_OPEN = re.compile(r"^(`{3,}|~{3,})(.*)$")
# Blockquote markers and a list marker may precede a fence nested in a list item.
_LINE_PREFIX = re.compile(r"^[ \t>]*(?:(?:[-*+]|\d{1,9}[.)])[ \t]+)?")
_MARKDOWN = MarkdownIt("commonmark").enable("table")


class Splitter(Protocol):
    """Turns one document into its chunks."""

    def split(self, document: Document) -> list[Chunk]:
        """The chunks of ``document``, ordinals 0..n-1."""
        ...


@dataclass(frozen=True, slots=True)
class _Unit:
    """A piece of a block packed whole; a row carries its table header for continuations."""

    text: str
    block: int
    joiner: str = "\n"
    kind: str = "text"
    header: str | None = None


def _words(text: str) -> int:
    return len(text.split())


def _render(units: Sequence[_Unit]) -> str:
    out: list[str] = []
    block: int | None = None
    for unit in units:
        if unit.block != block:
            if out:
                out.append("\n\n")
            if unit.header:
                out.append(unit.header + "\n")
            block = unit.block
        else:
            out.append(unit.joiner)
        out.append(unit.text)
    return "".join(out).rstrip().lstrip("\n")


def _sentences(text: str, block: int, joiner: str) -> list[_Unit]:
    units: list[_Unit] = []
    pending = joiner
    for index, part in enumerate(_SENTENCE_BREAK.split(text)):
        if index % 2:
            if units:  # keep paragraph and line breaks as they were
                pending = "\n\n" if part.count("\n") > 1 else "\n" if "\n" in part else " "
        elif part.strip():
            units.append(_Unit(part, block, pending))
    return units


def _lines(unit: _Unit) -> list[_Unit]:
    """The lines of a text unit; a fence (even nested in a list item) stays one code unit."""
    units: list[_Unit] = []
    fence: list[str] = []
    marker = joiner = ""
    blank = False
    for line in unit.text.split("\n"):
        bare = _LINE_PREFIX.sub("", line).rstrip()
        if marker:
            fence.append(line)
            if bare and set(bare) == {marker[0]} and len(bare) >= len(marker):
                units.append(_Unit("\n".join(fence), unit.block, joiner, "code"))
                fence, marker = [], ""
            continue
        joiner = unit.joiner if not units else "\n\n" if blank else "\n"
        match = _FENCE_OPEN.match(bare)
        if match and not (match[1][0] == "`" and "`" in match[2]):
            marker, fence = match[1], [line]
        elif line.strip():
            units.append(_Unit(line, unit.block, joiner))
        blank = not line.strip()
    if fence:  # an unclosed fence runs to the end of its container, as in CommonMark
        units.append(_Unit("\n".join(fence), unit.block, joiner, "code"))
    return units


def _refine(unit: _Unit, limit: int | None) -> list[_Unit]:
    """Split a text unit one level finer: lines, then sentences, then (with a limit) words."""
    if unit.kind != "text":
        return [unit]
    lines = _lines(unit) if "\n" in unit.text else []
    if len(lines) > 1 or (lines and lines[0].kind == "code"):
        return lines
    pieces = _sentences(unit.text, unit.block, unit.joiner)
    if len(pieces) > 1 or limit is None:
        return pieces or [unit]
    words = unit.text.split()
    return [
        _Unit(" ".join(words[k : k + limit]), unit.block, unit.joiner if k == 0 else " ")
        for k in range(0, len(words), limit)
    ]


def _fit(unit: _Unit, limit: int) -> list[_Unit]:
    if unit.kind != "text" or _words(unit.text) <= limit:
        return [unit]
    pieces = _refine(unit, limit)
    if len(pieces) == 1:
        return pieces
    return [fitted for piece in pieces for fitted in _fit(piece, limit)]


def _tail(units: Sequence[_Unit], budget: int) -> list[_Unit]:
    """The longest suffix of ``units`` within ``budget`` words, cut at a line or sentence."""
    taken: list[_Unit] = []
    for unit in reversed(units):
        if unit.kind in ("code", "header"):  # overlap must never start inside a fence
            break
        size = _words(unit.text)
        if size <= budget:
            taken.insert(0, unit)
            budget -= size
            continue
        pieces = _refine(unit, None)
        if len(pieces) > 1:
            taken = _tail(pieces, budget) + taken
        break
    return taken


def _pack(items: Iterable[list[_Unit]], max_words: int, overlap_words: int) -> list[list[_Unit]]:
    """Greedily fill chunks with items (each packed whole), overlapping consecutive chunks."""
    chunks: list[list[_Unit]] = []
    current: list[_Unit] = []
    for item in items:
        if not current or _words(_render(current + item)) <= max_words:
            current = current + item
            continue
        chunks.append(current)
        budget = min(overlap_words, max_words - _words(_render(item)))
        tail = _tail(current, budget) if budget > 0 else []
        # Repeating the whole previous chunk would be duplication, not overlap.
        if sum(_words(u.text) for u in tail) >= sum(_words(u.text) for u in current):
            tail = []
        candidate = tail + item
        current = candidate if tail and _words(_render(candidate)) <= max_words else list(item)
    if current:
        chunks.append(current)
    return chunks


def _check_sizes(max_words: int, overlap_words: int) -> None:
    if max_words < 1 or overlap_words < 0:
        raise ConfigurationError(f"invalid splitter sizes: {max_words=}, {overlap_words=}")


def source_title(label: str) -> str:
    """A source label in words, e.g. ``docs/RECORD_LOCKING_USER.md`` -> ``docs record
    locking user``: the document's identity, as a header the model can read."""
    stem = label[:-3] if label.lower().endswith(".md") else label
    return " ".join(w.lower() for w in re.split(r"[/_\-.\s]+", stem) if w)


def _chunk(
    document: Document,
    ordinal: int,
    text: str,
    crumb: list[str],
    prepend: bool,
    label: bool = False,
    section: str | None = None,
) -> Chunk:
    metadata: dict[str, Any] = {**document.metadata, "heading_breadcrumb": list(crumb)}
    safe_label = section_safe_label(document.metadata, section)
    if safe_label is not None:
        metadata["safe_source_label"] = safe_label
    # A chunk alone loses which document and section it came from; the header puts that
    # context into the embedded text only, not into the stored excerpt.
    header = [source_title(document.source)] if label else []
    if prepend and crumb:
        header.append(" > ".join(crumb))
    embed = "\n".join(header) + "\n\n" + text if header else None
    return Chunk(document.source, ordinal, text, metadata, embed)


def _inline_text(token: Token) -> str:
    parts = []
    for child in token.children or []:
        if child.type in ("text", "code_inline", "image"):
            parts.append(child.content)
        elif child.type in ("softbreak", "hardbreak"):
            parts.append(" ")
    return " ".join("".join(parts).split())


@dataclass(frozen=True)
class MarkdownAwareSplitter:
    """Splits by heading sections, packing whole Markdown blocks up to ``max_words``.

    Chunk text is a slice of the original Markdown. Fenced code never splits; tables
    split between rows and repeat their header; each chunk's metadata gets the
    ``heading_breadcrumb`` of its section.
    """

    max_words: int = 120
    overlap_words: int = 20
    prepend_heading_breadcrumb: bool = True
    prepend_source_label: bool = False

    def __post_init__(self) -> None:
        _check_sizes(self.max_words, self.overlap_words)

    def split(self, document: Document) -> list[Chunk]:
        """The document's chunks, section by section."""
        chunks: list[Chunk] = []
        for crumb, section, blocks in self._sections(document.text):
            items: list[list[_Unit]] = []
            for block in blocks:
                if _words(_render(block)) <= self.max_words:
                    items.append(block)
                else:
                    items.extend([piece] for unit in block for piece in _fit(unit, self.max_words))
            for units in _pack(items, self.max_words, self.overlap_words):
                text = _render(units)
                if text.strip():
                    chunks.append(
                        _chunk(document, len(chunks), text, crumb,
                               self.prepend_heading_breadcrumb, self.prepend_source_label,
                               section)
                    )
        return chunks

    def _sections(self, text: str) -> list[tuple[list[str], str | None, list[list[_Unit]]]]:
        """(breadcrumb, section, blocks) per heading section; ``section`` is the deepest
        heading of level 2 or below (``None`` before the first one)."""
        text = text.replace("\r\n", "\n").replace("\r", "\n")
        lines = text.split("\n")
        tokens = _MARKDOWN.parse(text)
        sections: list[tuple[list[str], str | None, list[list[_Unit]]]] = [([], None, [])]
        stack: list[tuple[int, str]] = []
        covered = 0

        def add_gap(end: int) -> None:
            # Lines no block token covers (e.g. link reference definitions) are kept as text.
            run: list[str] = []
            for line in [*lines[covered:end], ""]:
                if line.strip():
                    run.append(line)
                elif run:
                    sections[-1][2].append([_Unit("\n".join(run), len(sections[-1][2]))])
                    run = []

        for index, token in enumerate(tokens):
            if token.level != 0 or token.nesting == -1 or token.map is None:
                continue
            start, end = token.map
            add_gap(start)
            covered = max(covered, end)
            if token.type == "heading_open":
                level = int(token.tag[1:])
                while stack and stack[-1][0] >= level:
                    stack.pop()
                stack.append((level, _inline_text(tokens[index + 1])))
                section = next((t for lvl, t in reversed(stack) if lvl >= 2 and t), None)
                sections.append(([title for _, title in stack if title], section, []))
            else:
                block_id = len(sections[-1][2])
                sections[-1][2].append(self._units(tokens, index, lines, block_id))
        add_gap(len(lines))
        return [(crumb, section, [b for b in blocks if b]) for crumb, section, blocks in sections]

    @staticmethod
    def _units(tokens: list[Token], index: int, lines: list[str], block: int) -> list[_Unit]:
        token = tokens[index]
        assert token.map is not None
        start, end = token.map
        while end > start and not lines[end - 1].strip():
            end -= 1
        body = "\n".join(lines[start:end])
        if token.type in ("fence", "code_block"):
            return [_Unit(body, block, kind="code")]
        if token.type == "paragraph_open":
            return _sentences(body, block, "\n")
        if token.type == "table_open" and end - start >= 2:
            header = "\n".join(lines[start : start + 2])
            rows = [_Unit(r, block, header=header, kind="row") for r in lines[start + 2 : end]]
            return [_Unit(header, block, kind="header"), *rows]
        if token.type in ("bullet_list_open", "ordered_list_open"):
            units: list[_Unit] = []
            last = start
            for item in tokens[index + 1 :]:
                if item.level == 0:  # the list's closing token
                    break
                if item.type == "list_item_open" and item.level == 1 and item.map:
                    first, stop = item.map
                    while stop > first and not lines[stop - 1].strip():
                        stop -= 1
                    # A loose list keeps its blank lines between items.
                    joiner = "\n\n" if first > last else "\n"
                    units.append(_Unit("\n".join(lines[first:stop]), block, joiner))
                    last = stop
            if units:
                return units
        return [_Unit(body, block)] if body.strip() else []


@dataclass(frozen=True)
class SentenceSplitter:
    """Packs sentences up to ``max_words``, overlapping by whole sentences."""

    max_words: int = 120
    overlap_words: int = 20

    def __post_init__(self) -> None:
        _check_sizes(self.max_words, self.overlap_words)

    def split(self, document: Document) -> list[Chunk]:
        """The document's chunks; breadcrumbs are empty (headings are not parsed)."""
        units = _sentences(document.text.replace("\r\n", "\n"), 0, "")
        items = [[piece] for unit in units for piece in _fit(unit, self.max_words)]
        texts = [_render(units) for units in _pack(items, self.max_words, self.overlap_words)]
        return _numbered(document, texts)


@dataclass(frozen=True)
class DelimiterSplitter:
    """Splits on a fixed delimiter and packs consecutive pieces up to ``max_words``.

    A single piece larger than ``max_words`` is kept whole.
    """

    delimiter: str = "\n\n"
    max_words: int = 120

    def __post_init__(self) -> None:
        _check_sizes(self.max_words, 0)
        if not self.delimiter:
            raise ConfigurationError("the delimiter splitter needs a non-empty delimiter")

    def split(self, document: Document) -> list[Chunk]:
        """The document's chunks; breadcrumbs are empty."""
        pieces = [p.strip("\n") for p in document.text.split(self.delimiter)]
        items = [[_Unit(p, 0, self.delimiter)] for p in pieces if p.strip()]
        return _numbered(document, [_render(u) for u in _pack(items, self.max_words, 0)])


def _numbered(document: Document, texts: Iterable[str]) -> list[Chunk]:
    kept = [text.strip() for text in texts if text.strip()]
    return [_chunk(document, i, text, [], False) for i, text in enumerate(kept)]


def make_splitter(settings: Settings) -> Splitter:
    """The splitter named by ``settings.splitter``, configured from the splitter settings."""
    name = settings.splitter
    size, overlap = settings.splitter_max_words, settings.splitter_overlap_words
    if name == "markdown_aware":
        return MarkdownAwareSplitter(
            size,
            overlap,
            settings.splitter_prepend_heading_breadcrumb,
            settings.splitter_prepend_source_label,
        )
    if name == "sentence":
        return SentenceSplitter(size, overlap)
    if name == "delimiter":
        return DelimiterSplitter(settings.splitter_delimiter, size)
    raise ConfigurationError(
        f"unknown splitter {name!r} (accepted: markdown_aware, sentence, delimiter)"
    )


def split_documents(documents: Iterable[Document], splitter: Splitter) -> list[Chunk]:
    """Every chunk of every document, in document order."""
    return [chunk for document in documents for chunk in splitter.split(document)]

"""Unit tests of the document splitters."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import pytest

from ragplate.catalog.documents import Chunk, Document
from ragplate.catalog.errors import ConfigurationError
from ragplate.catalog.settings import Settings
from ragplate.tasks.indexing.split import (
    DelimiterSplitter,
    MarkdownAwareSplitter,
    SentenceSplitter,
    make_splitter,
    split_documents,
)

LARAPLATE = Path("/work/shared/corpora/laraplate")
_PREFIX = re.compile(r"^[ \t>]*(?:(?:[-*+]|\d{1,9}[.)])[ \t]+)?")


def doc(text: str, metadata: dict | None = None, source: str = "faq-test/doc.md") -> Document:
    return Document(source=source, text=text, metadata=metadata or {}, content_hash="h")


def words(text: str) -> int:
    return len(text.split())


def fences_balanced(text: str) -> bool:
    """True when every fence opened in ``text`` is closed in it (CommonMark rules, simplified)."""
    marker = ""
    for line in text.split("\n"):
        bare = _PREFIX.sub("", line).rstrip()
        if marker:
            if bare and set(bare) == {marker[0]} and len(bare) >= len(marker):
                marker = ""
        elif (m := re.match(r"^(`{3,}|~{3,})(.*)$", bare)) and not (m[1][0] == "`" and "`" in m[2]):
            marker = m[1]
    return marker == ""


def has_fence(text: str) -> bool:
    return any(re.match(r"^(`{3,}|~{3,})", _PREFIX.sub("", line)) for line in text.split("\n"))


def overlap(before: str, after: str) -> str:
    """The longest run of whole sentences that ends ``before`` and starts ``after``."""
    parts = re.split(r"(?<=\.) ", after)
    runs = [" ".join(parts[:k]) for k in range(len(parts), 0, -1)]
    return next((run for run in runs if before.endswith(run) and run != after), "")


def sentences(n: int, start: int = 0) -> str:
    return " ".join(f"Sentence number {i} has six words." for i in range(start, start + n))


NESTED = """\
# Alpha

Alpha body.

## Beta

### Gamma

Gamma body.

## Delta

Delta body.

# Epsilon

Epsilon body.
"""


def test_breadcrumbs_follow_nested_headings_and_reset_on_siblings() -> None:
    chunks = MarkdownAwareSplitter(50, 10).split(doc(NESTED))
    crumbs = {c.text: c.metadata["heading_breadcrumb"] for c in chunks}
    assert crumbs == {
        "Alpha body.": ["Alpha"],
        "Gamma body.": ["Alpha", "Beta", "Gamma"],
        "Delta body.": ["Alpha", "Delta"],
        "Epsilon body.": ["Epsilon"],
    }


def test_empty_section_yields_no_chunk_and_heading_not_repeated() -> None:
    chunks = MarkdownAwareSplitter(50, 10).split(doc(NESTED))
    assert ["Alpha", "Beta"] not in [c.metadata["heading_breadcrumb"] for c in chunks]
    assert not any("#" in c.text for c in chunks)


def test_heading_inline_markup_is_reduced_to_text() -> None:
    text = "# The `ai:run` **command**\n\nBody.\n\nSetext title\n---\n\nMore."
    chunks = MarkdownAwareSplitter(50, 10).split(doc(text))
    assert chunks[0].metadata["heading_breadcrumb"] == ["The ai:run command"]
    assert chunks[1].metadata["heading_breadcrumb"] == ["The ai:run command", "Setext title"]


def test_text_before_first_heading_has_empty_breadcrumb() -> None:
    chunks = MarkdownAwareSplitter(50, 10).split(doc("Preface line.\n\n# Title\n\nBody."))
    assert chunks[0].text == "Preface line."
    assert chunks[0].metadata["heading_breadcrumb"] == []
    assert chunks[0].embed_text is None
    assert chunks[1].metadata["heading_breadcrumb"] == ["Title"]


def test_front_matter_is_not_interpreted_here() -> None:
    # The reader strips front matter; left in, it is only Markdown (a rule and a heading).
    text = "---\ntitle: Hello\n---\n\nBody text."
    chunks = MarkdownAwareSplitter(50, 10).split(doc(text, {"audience": "user"}))
    assert all("title" not in c.metadata for c in chunks)
    assert all(c.metadata["audience"] == "user" for c in chunks)
    assert any(
        "title: Hello" in c.text or "title: Hello" in c.metadata["heading_breadcrumb"]
        for c in chunks
    )


def test_long_fence_stays_whole_and_fences_are_balanced() -> None:
    code = "\n".join(f"line_{i} = compute({i}, {i + 1})  # step {i}" for i in range(40))
    text = f"# Code\n\n{sentences(5)}\n\n```python\n{code}\n```\n\n{sentences(5, 5)}\n"
    chunks = MarkdownAwareSplitter(30, 10).split(doc(text))
    fence = f"```python\n{code}\n```"
    assert [c.text for c in chunks if "```" in c.text] == [fence]
    for chunk in chunks:
        assert fences_balanced(chunk.text)
        assert words(chunk.text) <= 30 or chunk.text == fence


def test_fence_nested_in_a_long_list_item_is_never_cut() -> None:
    code = "\n".join(f"    echo step {i} of the long script here" for i in range(15))
    text = f"# List\n\n- {sentences(4)}\n- Run this:\n\n    ```bash\n{code}\n    ```\n- Done.\n"
    chunks = MarkdownAwareSplitter(25, 5).split(doc(text))
    assert all(fences_balanced(c.text) for c in chunks)
    fenced = [c.text for c in chunks if "```" in c.text]
    assert len(fenced) == 1 and fenced[0].count("```") == 2
    assert "echo step 0 " in fenced[0] and "echo step 14 " in fenced[0]


def test_long_table_splits_between_rows_and_repeats_header() -> None:
    header = "| Key | Meaning |\n|-----|---------|"
    rows = [f"| key{i} | meaning of key number {i} |" for i in range(30)]
    text = "# Table\n\n" + header + "\n" + "\n".join(rows) + "\n"
    chunks = MarkdownAwareSplitter(40, 0).split(doc(text))
    assert len(chunks) > 1
    seen: list[str] = []
    for chunk in chunks:
        lines = chunk.text.split("\n")
        assert "\n".join(lines[:2]) == header
        assert all(line in rows for line in lines[2:])
        assert words(chunk.text) <= 40
        seen.extend(lines[2:])
    assert seen == rows


def test_consecutive_chunks_of_a_long_section_overlap() -> None:
    text = "# Long\n\n" + sentences(30) + "\n"
    chunks = MarkdownAwareSplitter(40, 12).split(doc(text))
    assert len(chunks) > 2
    for before, after in itertools.pairwise(chunks):
        shared = overlap(before.text, after.text)
        assert shared and words(shared) <= 12
        assert words(after.text) <= 40


def test_no_overlap_without_overlap_words_or_across_sections() -> None:
    text = "# A\n\n" + sentences(20) + "\n\n# B\n\n" + sentences(2, 100) + "\n"
    chunks = MarkdownAwareSplitter(40, 0).split(doc(text))
    body = " ".join(c.text for c in chunks)
    assert words(body) == words(sentences(20)) + words(sentences(2, 100))
    b_chunks = [c for c in chunks if c.metadata["heading_breadcrumb"] == ["B"]]
    assert [c.text for c in b_chunks] == [sentences(2, 100)]


def test_word_limit_respected_on_mixed_content() -> None:
    text = (
        "# Mixed\n\n"
        + sentences(12)
        + "\n\n"
        + "\n".join(f"- item {i}: {sentences(2, i)}" for i in range(12))
        + "\n\n"
        + "> "
        + sentences(10)
        + "\n\n"
        + "One single very long line "
        + "word " * 90
        + "without any stop\n"
    )
    chunks = MarkdownAwareSplitter(35, 8).split(doc(text))
    assert all(0 < words(c.text) <= 35 for c in chunks)
    assert all(c.text.strip() for c in chunks)


def test_metadata_copied_to_every_chunk_as_independent_copies() -> None:
    meta = {"module": "core", "tags": ["a"]}
    document = doc("# H\n\n" + sentences(20) + "\n\n## I\n\nMore.", meta)
    chunks = MarkdownAwareSplitter(30, 5).split(document)
    assert len(chunks) > 2
    assert all(c.metadata["module"] == "core" for c in chunks)
    chunks[0].metadata["module"] = "changed"
    chunks[0].metadata["heading_breadcrumb"].append("X")
    assert chunks[1].metadata["module"] == "core"
    assert chunks[1].metadata["heading_breadcrumb"] == ["H"]
    assert document.metadata == {"module": "core", "tags": ["a"]}
    assert "heading_breadcrumb" not in document.metadata


def test_embed_text_prefix_only_when_enabled() -> None:
    text = "Intro.\n\n# A\n\n## B\n\nBody."
    on = MarkdownAwareSplitter(50, 5, prepend_heading_breadcrumb=True).split(doc(text))
    off = MarkdownAwareSplitter(50, 5, prepend_heading_breadcrumb=False).split(doc(text))
    assert [c.embed_text for c in on] == [None, "A > B\n\nBody."]
    assert on[1].text_for_embedding == "A > B\n\nBody."
    assert [c.embed_text for c in off] == [None, None]
    assert [c.text for c in on] == [c.text for c in off] == ["Intro.", "Body."]


def test_ordinals_source_and_determinism() -> None:
    text = NESTED + "\n" + sentences(30)
    splitter = MarkdownAwareSplitter(30, 5)
    chunks = splitter.split(doc(text, source="faq-x/y.md"))
    assert [c.ordinal for c in chunks] == list(range(len(chunks)))
    assert {c.source for c in chunks} == {"faq-x/y.md"}
    assert chunks == splitter.split(doc(text, source="faq-x/y.md"))


@pytest.mark.parametrize(
    "splitter",
    [MarkdownAwareSplitter(30, 5), SentenceSplitter(30, 5), DelimiterSplitter("\n\n", 30)],
)
def test_blank_documents_give_no_chunks(splitter) -> None:  # type: ignore[no-untyped-def]
    assert splitter.split(doc("")) == []
    assert splitter.split(doc("  \n\n \n")) == []


def test_sentence_splitter_packs_and_overlaps_whole_sentences() -> None:
    text = sentences(10) + "\n\n" + sentences(10, 10)
    chunks = SentenceSplitter(max_words=20, overlap_words=6).split(doc(text, {"k": "v"}))
    assert len(chunks) > 3
    for chunk in chunks:
        assert words(chunk.text) <= 20
        assert chunk.metadata == {"k": "v", "heading_breadcrumb": []}
        assert chunk.embed_text is None
    for before, after in itertools.pairwise(chunks):
        assert 0 < words(overlap(before.text, after.text.split("\n")[0])) <= 6
    assert "Sentence number 19 has six words." in chunks[-1].text


def test_sentence_splitter_without_overlap_keeps_every_sentence_once() -> None:
    text = "First one! Second one? Third one.\nFourth one"
    chunks = SentenceSplitter(max_words=4, overlap_words=0).split(doc(text))
    assert [c.text for c in chunks] == ["First one! Second one?", "Third one.\nFourth one"]


def test_delimiter_splitter_packs_pieces_and_keeps_big_piece_whole() -> None:
    big = "word " * 50
    text = "one two\n\nthree four\n\n\n\n" + big + "\n\nfive six"
    chunks = DelimiterSplitter("\n\n", max_words=10).split(doc(text, {"k": 1}))
    assert [c.text for c in chunks] == ["one two\n\nthree four", big.strip(), "five six"]
    assert all(c.metadata == {"k": 1, "heading_breadcrumb": []} for c in chunks)
    assert [c.ordinal for c in chunks] == [0, 1, 2]


def test_delimiter_splitter_custom_delimiter_and_empty_delimiter() -> None:
    chunks = DelimiterSplitter("\n---\n", max_words=5).split(doc("a b\n---\nc d\n---\ne"))
    assert [c.text for c in chunks] == ["a b\n---\nc d", "e"]
    with pytest.raises(ConfigurationError):
        DelimiterSplitter("", max_words=3)


def test_invalid_sizes_are_configuration_errors() -> None:
    with pytest.raises(ConfigurationError):
        MarkdownAwareSplitter(0, 0)
    with pytest.raises(ConfigurationError):
        SentenceSplitter(10, -1)


@pytest.mark.parametrize(
    ("name", "cls"),
    [
        ("markdown_aware", MarkdownAwareSplitter),
        ("sentence", SentenceSplitter),
        ("delimiter", DelimiterSplitter),
    ],
)
def test_make_splitter_by_name(tmp_path: Path, name: str, cls: type) -> None:
    settings = Settings(
        home=tmp_path,
        splitter=name,
        splitter_max_words=77,
        splitter_overlap_words=7,
        splitter_prepend_heading_breadcrumb=False,
        splitter_delimiter="%%",
    )
    splitter = make_splitter(settings)
    assert isinstance(splitter, cls)
    assert splitter.max_words == 77
    if isinstance(splitter, MarkdownAwareSplitter):
        assert splitter.overlap_words == 7 and splitter.prepend_heading_breadcrumb is False
    if isinstance(splitter, DelimiterSplitter):
        assert splitter.delimiter == "%%"


def test_make_splitter_rejects_unknown_name(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path).model_copy(update={"splitter": "paragraphs"})
    with pytest.raises(ConfigurationError, match="paragraphs"):
        make_splitter(settings)


def test_split_documents_concatenates_in_order() -> None:
    docs = [doc("# A\n\nOne.", source="s/a.md"), doc("# B\n\nTwo.", source="s/b.md")]
    chunks = split_documents(docs, MarkdownAwareSplitter(50, 5))
    assert [(c.source, c.ordinal, c.text) for c in chunks] == [
        ("s/a.md", 0, "One."),
        ("s/b.md", 0, "Two."),
    ]


def _strip_front_matter(text: str) -> str:
    match = re.match(r"---[ \t]*\n.*?\n---[ \t]*(?:\n|$)", text, re.DOTALL)
    return text[match.end() :] if match else text


def test_laraplate_corpus_smoke() -> None:
    if not LARAPLATE.is_dir():
        pytest.skip(f"reference corpus not found at {LARAPLATE}")
    files = sorted(LARAPLATE.rglob("*.md"))
    assert files
    splitter = MarkdownAwareSplitter(120, 20)
    chunks: list[Chunk] = []
    for path in files:
        text = _strip_front_matter(path.read_text(encoding="utf-8"))
        document = doc(text, {"module": path.parent.name}, str(path.relative_to(LARAPLATE)))
        produced = splitter.split(document)
        assert [c.ordinal for c in produced] == list(range(len(produced)))
        chunks.extend(produced)
    assert chunks
    for chunk in chunks:
        assert chunk.text.strip()
        assert fences_balanced(chunk.text), chunk.text
        assert words(chunk.text) <= 120 or has_fence(chunk.text), chunk.text
        assert isinstance(chunk.metadata["heading_breadcrumb"], list)
        assert chunk.metadata["module"]

"""A documentation root written by someone hostile: links out of the root, an alias bomb,
front matter nested 20,000 levels, NUL bytes, a byte order mark, a 20 MB file, a binary
``.md``. Each is refused or read safely, and an index run names every refused file."""

from __future__ import annotations

import logging
import resource
import time
from pathlib import Path

import pytest

from ragplate.bench.hostile import ALIAS_BOMB, SECRET, write_hostile_corpus
from ragplate.catalog.documents import AudiencePolicy
from ragplate.catalog.errors import SourceError, SourcesError
from ragplate.tasks.indexing.front_matter import split_front_matter
from ragplate.tasks.indexing.read import (
    developer_corpus,
    read_document,
    read_root,
    read_sources,
    user_corpus,
)
from tests.testing.corpus import write_corpus

READ_LOGGERS = ("ragplate.tasks.indexing.read", "ragplate.tasks.indexing.front_matter")


@pytest.fixture
def warnings(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    for name in READ_LOGGERS:
        caplog.set_level(logging.WARNING, logger=name)
    return caplog


def rooted(tmp_path: Path) -> tuple[Path, Path]:
    """A root holding one ordinary page, and a directory outside it."""
    root = write_corpus(tmp_path / "root", {"page.md": "# Page\n\nAn ordinary page.\n"})
    return root, tmp_path / "outside"


# -- D1: links ---------------------------------------------------------------------------

def test_a_link_to_a_file_outside_the_root_is_not_indexed(
    tmp_path: Path, warnings: pytest.LogCaptureFixture
) -> None:
    root, outside = rooted(tmp_path)
    outside.mkdir()
    secret = outside / "secret.md"
    secret.write_text(f"# Secret\n\n{SECRET}\n")
    secret.chmod(0o600)
    (root / "leak.md").symlink_to(secret)

    documents = read_sources({"docs": root})

    assert [d.source for d in documents] == ["docs/page.md"]
    assert all(SECRET not in d.text for d in documents)
    assert "leak.md" in warnings.text and "outside the documentation root" in warnings.text


def test_a_link_to_a_directory_outside_the_root_is_not_indexed(
    tmp_path: Path, warnings: pytest.LogCaptureFixture
) -> None:
    root, outside = rooted(tmp_path)
    write_corpus(outside, {"notes.md": f"# Notes\n\n{SECRET}\n"})
    (root / "elsewhere").symlink_to(outside, target_is_directory=True)

    assert [d.source for d in read_sources({"": root})] == ["page.md"]
    assert "elsewhere" in warnings.text


def test_links_inside_the_root_are_followed_and_a_loop_is_read_once(tmp_path: Path) -> None:
    root, _ = rooted(tmp_path)
    write_corpus(root, {"guide/real.md": "# Real\n\nThe real page.\n"})
    (root / "alias.md").symlink_to(root / "guide" / "real.md")
    (root / "guide" / "up").symlink_to(root, target_is_directory=True)
    (root / "shortcut").symlink_to(root / "guide", target_is_directory=True)

    labels = [d.source for d in read_root("", root.resolve())]

    # Every real directory is walked once, whichever link reaches it.
    assert labels.count("page.md") == 1
    assert "alias.md" in labels and "guide/real.md" in labels
    assert not any(label.startswith("guide/up/") for label in labels)


# -- D2, D6: front matter that would expand or recurse without bound -----------------------

def test_an_alias_bomb_is_invalid_front_matter(warnings: pytest.LogCaptureFixture) -> None:
    started = time.perf_counter()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss

    metadata, body = split_front_matter("docs/laughs.md", ALIAS_BOMB)

    assert metadata == {}
    assert "A page whose front matter is an alias bomb." in body
    assert "docs/laughs.md" in warnings.text and "aliases are not allowed" in warnings.text
    # Nine levels of nine would be 387 million strings: it stops at the first alias.
    assert time.perf_counter() - started < 5
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 100_000  # KiB


@pytest.mark.parametrize("front_matter", [
    "x: " + "[" * 20_000 + "]" * 20_000,
    "x: " + "{a: " * 5_000 + "1" + "}" * 5_000,
    "\n".join(" " * level + "a:" for level in range(200)) + " 1",
])
def test_front_matter_nested_too_deeply_is_invalid_front_matter(
    front_matter: str, warnings: pytest.LogCaptureFixture
) -> None:
    metadata, body = split_front_matter("docs/deep.md", f"---\n{front_matter}\n---\nBody\n")

    assert (metadata, body) == ({}, "Body\n")
    assert "docs/deep.md: invalid YAML front matter" in warnings.text
    assert "nested deeper than 32 levels" in warnings.text


def test_front_matter_over_its_size_or_node_caps_is_invalid_front_matter(
    warnings: pytest.LogCaptureFixture
) -> None:
    large = "\n".join(f"key{i}: {'v' * 60}" for i in range(1200))
    many = "x: [" + ",".join(["1"] * 12_000) + "]"

    assert split_front_matter("a.md", f"---\n{large}\n---\nA\n") == ({}, "A\n")
    assert split_front_matter("b.md", f"---\n{many}\n---\nB\n") == ({}, "B\n")
    assert "larger than 65536 bytes" in warnings.text
    assert "more than 10000 nodes" in warnings.text


def test_ordinary_front_matter_still_reads() -> None:
    text = "---\naudience: user\ntags: [a, b]\nnested: {x: {y: [1, 2]}}\n---\nBody\n"
    metadata, _ = split_front_matter("ok.md", text)
    assert metadata == {"audience": "user", "tags": ["a", "b"], "nested": {"x": {"y": [1, 2]}}}


# -- D5: NUL bytes ------------------------------------------------------------------------

def test_a_nul_byte_is_refused_at_read_time_naming_the_file(tmp_path: Path) -> None:
    root, _ = rooted(tmp_path)
    (root / "nul.md").write_bytes(b"# Nul\n\nA NUL \x00 byte.\n")

    with pytest.raises(SourceError) as error:
        read_sources({"docs": root})

    assert str(error.value).startswith("docs/nul.md: holds a NUL character (U+0000)")
    assert error.value.exit_code == 2


def test_a_nul_escape_in_front_matter_is_refused(tmp_path: Path) -> None:
    root, _ = rooted(tmp_path)
    (root / "escaped.md").write_text('---\nmodule: "a\\0b"\n---\nText.\n')

    with pytest.raises(SourceError, match=r"escaped\.md: front matter holds a NUL"):
        read_document("", root, root / "escaped.md")


# -- D12: a byte order mark ---------------------------------------------------------------

def test_front_matter_after_a_byte_order_mark_is_read(tmp_path: Path) -> None:
    root, _ = rooted(tmp_path)
    page = (b"---\naudience: user\nmodule: help\nlocale: en\ncanonical_source: help/bom.md\n"
            b"safe_source_label: Help\nversion: '1'\npolicy_classification: user_safe\n"
            b"policy_classification_version: in-app-docs-v1\nrequired_permissions: []\n"
            b"tenant_scope: global\n---\n\n# Help\n\nHow to ask.\n")
    (root / "bom.md").write_bytes(b"\xef\xbb\xbf" + page)
    (root / "plain.md").write_bytes(page)

    bom = read_document("", root, root / "bom.md")
    plain = read_document("", root, root / "plain.md")

    assert bom.metadata == plain.metadata and bom.metadata["audience"] == "user"
    assert bom.text == plain.text and not bom.text.startswith("\ufeff")
    assert bom.content_hash == plain.content_hash  # the bytes after the mark
    assert [d.source for d in user_corpus([bom], AudiencePolicy())] == ["bom.md"]


# -- the cap on a file's size, binary files, every refusal named --------------------------

def test_a_file_over_the_size_cap_is_refused_without_being_read(tmp_path: Path) -> None:
    root, _ = rooted(tmp_path)
    (root / "huge.md").write_text("word " * 300_000)

    with pytest.raises(SourceError, match=r"huge\.md: is 1500000 bytes, above the cap of "
                       r"1000000 \(RAGPLATE_DOCS_MAX_FILE_BYTES\)"):
        read_sources({"": root}, max_bytes=1_000_000)


def test_every_refused_file_is_named_on_a_line_of_its_own(tmp_path: Path) -> None:
    root, outside = rooted(tmp_path)
    files = write_hostile_corpus(root, outside, big_bytes=2_000_000)

    with pytest.raises(SourcesError) as error:
        read_sources({"docs": root}, max_bytes=1_000_000)

    lines = str(error.value).splitlines()
    refused = sorted(f"docs/{f.path}" for f in files if f.refused)
    assert lines[0] == "3 documentation sources cannot be indexed, nothing was changed:"
    assert sorted(line.strip().split(":")[0] for line in lines[1:]) == refused
    assert error.value.exit_code == 2
    assert SECRET not in str(error.value)


def test_the_indexable_hostile_files_read_safely(
    tmp_path: Path, warnings: pytest.LogCaptureFixture
) -> None:
    root, outside = rooted(tmp_path)
    write_hostile_corpus(root, outside, refused=False)

    documents = developer_corpus(read_sources({"docs": root}))

    by_label = {d.source: d for d in documents}
    assert set(by_label) == {"docs/page.md", "docs/hostile/laughs.md", "docs/hostile/deep.md",
                             "docs/hostile/bom.md"}
    assert all(SECRET not in d.text for d in documents)
    assert by_label["docs/hostile/bom.md"].metadata["module"] == "hostile"
    assert by_label["docs/hostile/laughs.md"].metadata["module"] == "app"  # defaults only
    assert warnings.text.count("outside the documentation root") == 2

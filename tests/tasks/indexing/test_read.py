"""Reading documentation roots: labels, front matter, validation, corpora."""

from __future__ import annotations

import hashlib
import logging
import os
from pathlib import Path

import pytest

from ragplate.catalog.documents import AudiencePolicy
from ragplate.catalog.errors import SourceError, UnknownAudienceError
from ragplate.tasks.indexing.front_matter import split_front_matter
from ragplate.tasks.indexing.read import (
    developer_corpus,
    read_document,
    read_root,
    read_sources,
    source_label,
    source_paths,
    user_corpus,
)
from tests.testing.corpus import write_corpus

USER_FRONT_MATTER = """\
---
audience: user
module: billing
locale: en
canonical_source: docs/billing.md
safe_source_label: Billing help
version: "1.0"
policy_classification: user_safe
policy_classification_version: in-app-docs-v1
required_permissions: []
tenant_scope: global
---
"""


def test_label_is_prefix_and_relative_path(tmp_path: Path) -> None:
    path = tmp_path / "rel" / "path.md"

    assert source_label("P", tmp_path, path) == "P/rel/path.md"
    assert source_label("", tmp_path, path) == "rel/path.md"


def test_read_root_labels_every_markdown_file_recursively(tmp_path: Path) -> None:
    write_corpus(tmp_path, {"b.md": "B", "a/z.md": "Z", "a/b/c.md": "C", "notes.txt": "no"})

    labels = [d.source for d in read_root("faq-x", tmp_path)]
    bare = [d.source for d in read_root("", tmp_path)]

    assert labels == ["faq-x/a/b/c.md", "faq-x/a/z.md", "faq-x/b.md"]
    assert bare == ["a/b/c.md", "a/z.md", "b.md"]
    # Each document knows its root, so a run deletes only what its own roots indexed.
    assert {d.root for d in read_root("faq-x", tmp_path)} == {"faq-x"}
    assert {d.root for d in developer_corpus(read_root("", tmp_path))} == {""}


def test_front_matter_becomes_metadata_and_leaves_the_text(tmp_path: Path) -> None:
    write_corpus(tmp_path, {"doc.md": "---\nmodule: crm\ntags: [a, b]\nupdated: 2024-05-01\n"
                            "---\n# Title\n\nBody text.\n"})

    document = read_document("p", tmp_path, tmp_path / "doc.md")

    assert document.source == "p/doc.md"
    assert document.text == "# Title\n\nBody text.\n"
    assert "module:" not in document.text and "---" not in document.text
    # YAML dates become strings: metadata is plain JSON.
    assert document.metadata == {"module": "crm", "tags": ["a", "b"], "updated": "2024-05-01",
                                 "heading_breadcrumb": []}


def test_file_without_front_matter_keeps_its_text(tmp_path: Path) -> None:
    text = "# Title\n\n---\n\nA thematic break above, not front matter.\n"
    write_corpus(tmp_path, {"doc.md": text})

    document = read_document("", tmp_path, tmp_path / "doc.md")

    assert document.text == text
    assert document.metadata == {"heading_breadcrumb": []}


def test_crlf_front_matter_is_removed() -> None:
    metadata, body = split_front_matter("x.md", "---\r\nmodule: a\r\n---\r\nBody\r\n")

    assert metadata == {"module": "a"}
    assert body == "Body\r\n"


def test_invalid_yaml_gives_no_metadata_and_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    write_corpus(tmp_path, {"bad/doc.md": "---\nmodule: [unclosed\nlocale: en\n---\nBody.\n"})

    with caplog.at_level(logging.WARNING, logger="ragplate.tasks.indexing.read"):
        document = read_document("faq", tmp_path, tmp_path / "bad" / "doc.md")

    assert document.metadata == {"heading_breadcrumb": []}
    assert document.text == "Body.\n"  # the broken block is still not indexed
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "faq/bad/doc.md" in warnings[0].getMessage()
    assert "invalid YAML front matter" in warnings[0].getMessage()


def test_front_matter_that_is_not_a_mapping_warns(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="ragplate.tasks.indexing.read"):
        metadata, body = split_front_matter("faq/list.md", "---\n- a\n- b\n---\nBody\n")

    assert (metadata, body) == ({}, "Body\n")
    assert "faq/list.md" in caplog.text and "not a mapping" in caplog.text


def test_unknown_audience_names_the_file_and_value(tmp_path: Path) -> None:
    write_corpus(tmp_path, {"ok.md": "---\naudience: user\n---\nFine.\n",
                            "sub/bad.md": "---\naudience: Admin\n---\nNot fine.\n"})

    with pytest.raises(UnknownAudienceError) as error:
        read_sources({"faq-t": tmp_path})

    assert "faq-t/sub/bad.md" in str(error.value)
    assert "'Admin'" in str(error.value)
    assert error.value.source == "faq-t/sub/bad.md"


def test_case_matters_for_audience(tmp_path: Path) -> None:
    write_corpus(tmp_path, {"doc.md": "---\naudience: User\n---\nText.\n"})

    with pytest.raises(UnknownAudienceError, match=r"doc\.md: unknown audience 'User'"):
        read_document("", tmp_path, tmp_path / "doc.md")


def test_non_utf8_file_is_an_error_naming_it(tmp_path: Path) -> None:
    (tmp_path / "latin").mkdir()
    (tmp_path / "latin" / "caf.md").write_bytes("# Café\n".encode("latin-1"))

    with pytest.raises(SourceError) as error:
        read_sources({"faq": tmp_path})

    assert str(error.value).startswith("faq/latin/caf.md: is not UTF-8")
    assert error.value.source == "faq/latin/caf.md"


def test_missing_root_is_an_error_naming_it(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere"

    with pytest.raises(SourceError, match="documentation root is not a directory") as error:
        read_sources({"faq": missing})

    assert str(missing) in str(error.value)


def test_duplicate_labels_across_roots_are_refused(tmp_path: Path) -> None:
    first = write_corpus(tmp_path / "one", {"guide/a.md": "one"})
    second = write_corpus(tmp_path / "two", {"a.md": "two"})

    # Prefix "guide" + a.md and bare guide/a.md are the same label.
    with pytest.raises(SourceError) as error:
        read_sources({"": first, "guide": second})

    assert str(error.value).startswith("guide/a.md: label is produced by two roots")


def test_read_sources_merges_roots_in_label_order(tmp_path: Path) -> None:
    first = write_corpus(tmp_path / "one", {"z.md": "z", "a.md": "a"})
    second = write_corpus(tmp_path / "two", {"m.md": "m"})

    documents = read_sources({"b": first, "a": second})

    assert [d.source for d in documents] == ["a/m.md", "b/a.md", "b/z.md"]


def test_content_hash_is_the_file_bytes_and_follows_edits(tmp_path: Path) -> None:
    path = write_corpus(tmp_path, {"doc.md": "---\nmodule: a\n---\nv1\n"}) / "doc.md"
    before = read_document("", tmp_path, path)
    again = read_document("", tmp_path, path)

    path.write_text("---\nmodule: b\n---\nv1\n")  # only front matter changes
    after = read_document("", tmp_path, path)

    assert before.content_hash == again.content_hash
    assert before.content_hash == hashlib.sha256(b"---\nmodule: a\n---\nv1\n").hexdigest()
    assert after.content_hash != before.content_hash


def test_developer_corpus_applies_defaults_to_every_document(tmp_path: Path) -> None:
    write_corpus(tmp_path, {"a.md": "A", "b.md": "---\naudience: developer\nmodule: crm\n---\nB"})
    documents = read_sources({"p": tmp_path})

    corpus = developer_corpus(documents)

    assert [d.source for d in corpus] == ["p/a.md", "p/b.md"]
    assert corpus[0].metadata == {"audience": "shared", "module": "app", "locale": "und",
                                  "canonical_source": "p/a.md", "heading_breadcrumb": [],
                                  "source_type": "file"}
    assert (corpus[1].metadata["audience"], corpus[1].metadata["module"]) == ("developer", "crm")
    assert [(d.text, d.content_hash) for d in corpus] == [(d.text, d.content_hash)
                                                          for d in documents]
    assert documents[0].metadata == {"heading_breadcrumb": []}  # inputs untouched


def test_user_corpus_admits_only_declared_documents(tmp_path: Path) -> None:
    write_corpus(tmp_path, {
        "user.md": USER_FRONT_MATTER + "User help.\n",
        "shared.md": USER_FRONT_MATTER.replace("audience: user", "audience: shared") + "S.\n",
        "dev.md": USER_FRONT_MATTER.replace("audience: user", "audience: developer") + "D.\n",
        "no-version.md": USER_FRONT_MATTER.replace('version: "1.0"\n', "") + "N.\n",
        "bare.md": "No front matter.\n",
    })
    documents = read_sources({"u": tmp_path})

    admitted = user_corpus(documents, AudiencePolicy())

    assert [d.source for d in admitted] == ["u/shared.md", "u/user.md"]
    # No default is applied to satisfy the policy.
    assert user_corpus(developer_corpus(documents), AudiencePolicy()) == [
        d for d in developer_corpus(documents) if d.source in ("u/shared.md", "u/user.md")
    ]
    assert user_corpus(documents, AudiencePolicy("in-app-docs-v9")) == []


def test_a_file_name_that_is_not_utf8_is_refused_by_its_bytes(tmp_path: Path) -> None:
    name = b"caf\xe9.md"
    (tmp_path / os.fsdecode(name)).write_text("# Cafe\n\ntext\n")

    with pytest.raises(SourceError) as error:
        read_sources({"sm": tmp_path})

    assert str(error.value) == "sm/caf\\xe9.md: file name is not valid UTF-8; rename the file"
    assert error.value.exit_code == 2


def test_a_markdown_file_named_in_upper_case_is_named_in_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "guide.md").write_text("# Guide\n", encoding="utf-8")
    (tmp_path / "NOTES.MD").write_text("# Notes\n", encoding="utf-8")
    (tmp_path / "notes.txt").write_text("not markdown\n", encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="ragplate.tasks.indexing.read"):
        found = source_paths(tmp_path.resolve())
    assert [p.name for p in found] == ["guide.md"]
    [warning] = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert "NOTES.MD: not indexed: only files ending in .md (lower case) are" in warning

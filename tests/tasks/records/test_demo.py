"""Demo content from ragplate's docs: paragraph extraction and the seeding itself."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa

from ragplate.catalog.entities import CMS_CONTENTS, SHIPPED
from ragplate.catalog.errors import InvalidInputError
from ragplate.infra.models.base import Embedder
from ragplate.infra.records.texts import missing_embeddings, record_texts
from ragplate.infra.records.vectors import drop_model_index, model_index_exists
from ragplate.tasks.records.demo import (
    demo_paragraphs,
    demo_records,
    markdown_paragraphs,
    seed_demo,
)
from tests.testing.records import CachingEmbedder, reset_content

CONTENTS = SHIPPED[CMS_CONTENTS]

PAGE = """---
audience: developer
---

# Guide

Intro with **bold**, `code`, a [link](https://example.com) and *emphasis*.

## Setup

- first item
- second item

```bash
ragplate up   # not prose
```

| a | b |
|---|---|
| 1 | 2 |

> Quoted text.
"""


def test_markdown_paragraphs_keep_prose_only() -> None:
    paragraphs = markdown_paragraphs(PAGE.split("---\n", 2)[2])

    assert paragraphs == [
        (["Guide"], "Intro with bold, code, a link and emphasis."),
        (["Guide", "Setup"], "first item second item"),
        (["Guide", "Setup"], "Quoted text."),
    ]


def test_demo_paragraphs_of_the_bundled_docs_are_clean_and_deterministic() -> None:
    paragraphs = demo_paragraphs()

    assert len(paragraphs) >= 100
    assert paragraphs == demo_paragraphs()
    for p in paragraphs:
        assert p.title and 5 <= len(p.body.split()) <= 120, p
        assert not any(mark in p.body for mark in ("```", "**", "](", "audience:")), p
        assert not p.body.startswith(("|", "#", "- ")), p
    assert {p.source for p in paragraphs} == {f.name for f in Path("docs").glob("*.md")}


def test_demo_records_cycle_with_distinct_titles(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("# A\n\nOne two three four five six.\n\n"
                                   "# B\n\nSeven eight nine ten eleven twelve.\n")
    paragraphs = demo_paragraphs(tmp_path)

    records = demo_records(5, paragraphs)

    assert [t for t, _ in records] == ["A", "B", "A (2)", "B (2)", "A (3)"]
    assert records[2][1] == records[0][1]
    with pytest.raises(InvalidInputError):
        demo_records(1, [])


@pytest.mark.integration
def test_seed_demo_writes_records_translations_and_vectors(
    engine: sa.Engine, embedder: Embedder
) -> None:
    reset_content(engine)
    with engine.begin() as conn:  # so that the bulk load builds it afterwards
        drop_model_index(conn, embedder.profile.key)
    caching = CachingEmbedder(embedder)
    progress: list[tuple[int, int]] = []

    summary = seed_demo(engine, records=5, locales=["en", "it"], tenant="acme", batch_size=2,
                        profiles=[embedder.profile], embedder_for=lambda _: caching,
                        on_progress=lambda done, total: progress.append((done, total)))

    assert (summary.records, summary.texts, summary.embedded) == (5, 10, 5)
    assert summary.index_created is True
    assert progress == [(2, 5), (4, 5), (5, 5)]
    assert len(caching.passages) == 5  # one text per record, shared by both locales
    with engine.connect() as conn:
        texts = record_texts(conn, CONTENTS)
        assert missing_embeddings(conn, CONTENTS, embedder.profile.key) == []
        assert model_index_exists(conn, embedder.profile.key)
        tenants = conn.execute(sa.text("SELECT DISTINCT tenant, status FROM cms_contents")).all()
    assert len(texts) == 10 and {t.locale for t in texts} == {"en", "it"}
    assert [tuple(r) for r in tenants] == [("acme", "published")]
    first = demo_paragraphs()[0]
    assert texts[0].text == f"{first.title}\n\n{first.body}"


@pytest.mark.integration
@pytest.mark.parametrize(
    ("arguments", "message"),
    [({"records": 0}, "at least 1"), ({"locales": ["en", "Italian"]}, "Italian"),
     ({"tenant": ""}, "tenant")],
)
def test_seed_demo_refuses_bad_options(
    engine: sa.Engine, embedder: Embedder, arguments: dict[str, object], message: str
) -> None:
    options: dict[str, object] = {"records": 1, "locales": ["en"], "tenant": "global",
                                  **arguments}
    with pytest.raises(InvalidInputError, match=message):
        seed_demo(engine, profiles=[embedder.profile], embedder_for=lambda _: embedder,
                  **options)  # type: ignore[arg-type]

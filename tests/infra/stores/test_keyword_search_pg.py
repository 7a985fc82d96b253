"""PostgreSQL keyword search on the generated ``rag_chunks.search`` column (migration
0004): BM25 per label, filters in SQL, agreement with the Python drivers' ranking."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa

from ragplate.catalog.schema import CONTENT_SEARCH_VECTOR, DOCS_SEARCH_VECTOR
from ragplate.catalog.text_search import LANGUAGES
from ragplate.infra.models.local import LocalEmbedder
from ragplate.infra.stores.base import SearchFilters
from ragplate.infra.stores.memory import MemoryStore
from ragplate.infra.stores.pgvector import PgvectorStore
from ragplate.tasks.evaluation import documentation
from ragplate.tasks.indexing.read import read_sources, user_corpus
from ragplate.tasks.retrieval.documentation import retrieve_user
from tests.testing.corpus import index_documents

pytestmark = pytest.mark.integration
PROFILE = documentation.FIXTURE_PROFILE


def test_the_migration_and_the_catalog_agree() -> None:
    from importlib import import_module

    migration = import_module("ragplate.infra.migrations.versions.0008_language_keyword_search")
    assert migration.DOCS_SEARCH_VECTOR == DOCS_SEARCH_VECTOR
    assert migration.CONTENT_SEARCH_VECTOR == CONTENT_SEARCH_VECTOR
    assert migration.LOCALES == LANGUAGES


@pytest.fixture(scope="module")
def store(engine: sa.Engine) -> PgvectorStore:
    """The fixture corpus in a dedicated index of the session database."""
    from ragplate.catalog.documents import AudiencePolicy

    pg = PgvectorStore("kw-test", PROFILE, engine)
    pg.reset()
    documents = user_corpus(read_sources({"": documentation.FIXTURE_CORPUS}), AudiencePolicy())
    index_documents(pg, LocalEmbedder(PROFILE), documents)
    return pg


def test_generated_column_and_gin_index(engine: sa.Engine, store: PgvectorStore) -> None:
    with engine.connect() as conn:
        vector = conn.execute(sa.text(
            "SELECT search::text FROM rag_chunks WHERE index_name = 'kw-test' "
            "AND source = 'faq-fixture-help/INVOICES_USER.md' ORDER BY ordinal LIMIT 1"
        )).scalar_one()
        indexes = conn.execute(sa.text(
            "SELECT indexdef FROM pg_indexes WHERE indexname = 'ix_rag_chunks_search'"
        )).scalar_one()
    assert "'invoic':" in vector and "A" in vector  # stemmed, label words weighted A
    assert "gin (search)" in indexes


def test_bm25_per_label_with_filters(store: PgvectorStore) -> None:
    labels = [h.metadata["safe_source_label"] for h in store.keyword_search(
        "credit note", top_k=10, label_key="safe_source_label")]
    assert labels[0] == "Billing · Invoice administration · Issuing a credit note"
    assert len(labels) == len(set(labels))
    hidden = store.keyword_search("credit note", top_k=10, label_key="safe_source_label",
                                  filters=SearchFilters(permissions=frozenset()))
    assert all("administration" not in h.metadata["safe_source_label"] for h in hidden)
    assert store.keyword_search("the and of", top_k=5) == []
    assert store.keyword_search("it's back\\slash 'quote'", top_k=5) == []
    with pytest.raises(ValueError, match="label key"):
        store.keyword_search("x", top_k=5, label_key="metadata); drop table x; --")


def test_pg_and_memory_agree_on_the_best_label(store: PgvectorStore) -> None:
    memory = MemoryStore("kw-test", PROFILE)
    memory.reset()
    from ragplate.catalog.documents import AudiencePolicy

    documents = user_corpus(read_sources({"": documentation.FIXTURE_CORPUS}), AudiencePolicy())
    index_documents(memory, LocalEmbedder(PROFILE), documents)
    for query in ("payment reminder", "templates", "download invoice"):
        pg = store.keyword_search(query, top_k=3, label_key="safe_source_label")
        mem = memory.keyword_search(query, top_k=3, label_key="safe_source_label")
        assert pg[0].metadata["safe_source_label"] == mem[0].metadata["safe_source_label"]


def test_hybrid_user_retrieval_on_pgvector(store: PgvectorStore, tmp_path: Path) -> None:
    from ragplate.catalog.documents import AccessContext, AudiencePolicy

    hits = retrieve_user("when is a payment reminder emailed?", store=store,
                         embedder=LocalEmbedder(PROFILE), access=AccessContext(locale="en"),
                         policy=AudiencePolicy(), top_k=3, strategy="hybrid")
    assert hits[0].source_label == "Billing · Invoices · Payment reminders"


def test_a_chunk_with_an_inline_image_of_a_megabyte_is_written_and_found(
    engine: sa.Engine,
) -> None:
    import base64
    import random

    from ragplate.catalog.documents import Document

    # One "word" the splitter cannot cut: its tsvector alone would pass PostgreSQL's 1 MB.
    image = base64.b64encode(random.Random(7).randbytes(800_000)).decode()
    text = f"# Diagram\n\nThe quokka diagram.\n\n![d](data:image/png;base64,{image})\n"
    pg = PgvectorStore("kw-big", PROFILE, engine)
    pg.reset()
    try:
        written = index_documents(pg, LocalEmbedder(PROFILE),
                                  [Document("big.md", text, {"heading_breadcrumb": []}, "h")])

        assert written >= 1
        assert [h.source for h in pg.keyword_search("quokka", top_k=5)] == ["big.md"]
    finally:
        pg.reset()

"""Hybrid documentation retrieval: BM25 per label, fusion by label, section safe labels."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ragplate.catalog.documents import (
    AccessContext,
    AudiencePolicy,
    Document,
    section_safe_label,
)
from ragplate.catalog.errors import ConfigurationError
from ragplate.infra.models.local import LocalEmbedder
from ragplate.infra.stores.base import KeywordSearch, SearchFilters, StoreHit
from ragplate.infra.stores.filesystem import FilesystemStore
from ragplate.infra.stores.lexical import bm25_scores, query_terms, term_counts, tokens
from ragplate.infra.stores.memory import MemoryStore
from ragplate.tasks.evaluation import documentation
from ragplate.tasks.indexing.read import developer_corpus, read_sources, user_corpus
from ragplate.tasks.indexing.split import MarkdownAwareSplitter
from ragplate.tasks.retrieval.documentation import (
    ADAPTIVE_KEYWORD_WEIGHT,
    fuse_by_label,
    resolve_strategy,
    retrieve_developer,
    retrieve_user,
)
from tests.testing.corpus import index_documents, write_corpus

PROFILE = documentation.FIXTURE_PROFILE


def hit(source: str, score: float = 1.0, label: str | None = None) -> StoreHit:
    return StoreHit(source, 0, "t", {"safe_source_label": label or source}, score)


def test_tokens_and_bm25() -> None:
    assert tokens("How do I set SENTENCE_TRANSFORMERS_TIMEOUT, perf:crud?") == [
        "set", "sentence", "transformers", "timeout", "perf", "crud"]
    docs = [term_counts("a.md", "rare word here", {}), term_counts("b.md", "word word", {}),
            term_counts("c.md", "nothing", {})]
    scores = bm25_scores(query_terms("rare word", ["simple"]), docs)
    assert scores[0] > scores[1] > 0.0 and scores[2] == 0.0
    # A word of the source label or breadcrumb counts 1 + FIELD_BOOST times.
    boosted = term_counts("guide/export.md", "text", {"heading_breadcrumb": ["Export"]})
    assert boosted["export"] == 6 and boosted["text"] == 1
    assert bm25_scores(query_terms("the and", ["simple"]), docs) == [0.0, 0.0, 0.0]


def test_tokens_fold_accents_and_stem_in_the_chunk_language() -> None:
    # simple: PostgreSQL's English stop words only ("e" stays), accents folded.
    assert tokens("Perché è così") == ["perche", "e", "cosi"]
    assert tokens("Straße grønne nasıl", "german") == ["strass", "gronn", "nasil"]
    assert tokens("Как перестроить индекс", "russian") == ["перестро", "индекс"]
    assert tokens("rebuilding the indexes", "english") == ["rebuild", "index"]
    assert tokens("ricostruire gli indici", "italian") == ["ricostru", "indic"]
    italian = term_counts("it/guida.md", "Come ricostruire l'indice", {"locale": "it"})
    english = term_counts("en/guide.md", "Rebuilding the index", {"locale": "en"})
    und = term_counts("notes.md", "Rebuilding the index", {"locale": "und"})
    assert italian["ricostru"] == 1 and english["rebuild"] == 1 and und["rebuilding"] == 1
    # Read in a chunk's language, the query finds it by its stems.
    terms = query_terms("ricostruisco gli indici", ["italian", "simple"])
    assert bm25_scores(terms, [italian, english, und])[0] > 0
    terms = query_terms("how do I rebuild the index", ["english", "simple"])
    scores = bm25_scores(terms, [italian, english, und])
    assert scores[1] > 0 and scores[2] > 0


def test_fusion_is_by_label() -> None:
    dense = [hit("a.md", 0.9), hit("a.md", 0.8), hit("b.md", 0.7)]
    sparse = [hit("b.md", 5.0), hit("c.md", 4.0)]
    fused = fuse_by_label([dense, sparse], None)
    assert [h.source for h in fused] == ["b.md", "a.md", "c.md"]
    # b.md: rank 2 of the distinct dense labels, rank 1 of the sparse ones.
    assert fused[0].score == pytest.approx(1 / 62 + 1 / 61)
    assert fused[1].score == pytest.approx(1 / 61)


def test_a_weighted_fusion_lets_the_keyword_ranking_lead() -> None:
    dense = [hit("a.md", 0.9), hit("b.md", 0.7)]
    sparse = [hit("b.md", 5.0), hit("a.md", 4.0)]
    assert [h.source for h in fuse_by_label([dense, sparse], None)] == ["a.md", "b.md"]
    fused = fuse_by_label([dense, sparse], None, weights=[1.0, 2.0])
    assert [h.source for h in fused] == ["b.md", "a.md"]
    assert fused[0].score == pytest.approx(1 / 62 + 2 / 61)


class _VectorOnly:
    """A store without keyword search (the protocol's search methods only)."""

    def search(self, *args: object, **kwargs: object) -> list[StoreHit]:
        return []


@pytest.mark.parametrize(("query", "expected"), [
    ("IReranker", ("hybrid", [1.0, ADAPTIVE_KEYWORD_WEIGHT])),
    ("DocumentAudiencePolicy class", ("hybrid", [1.0, ADAPTIVE_KEYWORD_WEIGHT])),
    ("error INV-1042 on export", ("hybrid", [1.0, ADAPTIVE_KEYWORD_WEIGHT])),
    ("How do I rebuild the documentation index after editing a page?", ("vector", None)),
    ("Come ricostruisco l'indice della documentazione?", ("vector", None)),
])
def test_adaptive_retrieval_reads_a_bare_term_by_its_keywords_too(
        tmp_path: Path, query: str, expected: tuple[str, list[float] | None]) -> None:
    store = _fixture_store(tmp_path)
    assert resolve_strategy("adaptive", query, store) == expected
    # Explicit strategies are left as asked; a store without keyword search stays vector.
    assert resolve_strategy("hybrid", query, store) == ("hybrid", None)
    assert resolve_strategy("vector", query, store) == ("vector", None)
    assert resolve_strategy("adaptive", query, _VectorOnly()) == ("vector", None)  # type: ignore[arg-type]


def _fixture_store(tmp_path: Path, index: str = "developer") -> MemoryStore:
    setup = documentation.fixture_setup(index, strategy="hybrid")  # type: ignore[arg-type]
    assert isinstance(setup.store, MemoryStore)
    return setup.store


def test_memory_keyword_search_scores_labels(tmp_path: Path) -> None:
    store = _fixture_store(tmp_path)
    assert isinstance(store, KeywordSearch)
    hits = store.keyword_search("CannotUnlockError forceRelease", top_k=5)
    assert hits[0].source == "faq-fixture-core/RECORD_LOCKS.md"
    assert len({h.source for h in hits}) == len(hits)  # one chunk per label
    assert "CannotUnlockError" in hits[0].text
    assert store.keyword_search("zebra", top_k=5) == []
    user = _fixture_store(tmp_path, "user")
    labels = [h.metadata["safe_source_label"] for h in user.keyword_search(
        "credit note", top_k=10, filters=SearchFilters(permissions=frozenset()),
        label_key="safe_source_label")]
    assert "Billing · Invoice administration · Issuing a credit note" not in labels
    assert "Billing · Invoices · Correcting an invoice" in labels


def test_filesystem_store_offers_keyword_search(tmp_path: Path) -> None:
    store = FilesystemStore("developer", PROFILE, tmp_path)
    root = write_corpus(tmp_path / "docs", {"a.md": "# A\n\nbackflush issues stock\n",
                                            "b.md": "# B\n\nnothing relevant\n"})
    index_documents(store, LocalEmbedder(PROFILE), developer_corpus(read_sources({"": root})))
    assert [h.source for h in store.keyword_search("backflush", top_k=3)] == ["a.md"]


def test_hybrid_retrieval_and_its_refusal(tmp_path: Path) -> None:
    store = _fixture_store(tmp_path)
    embedder = LocalEmbedder(PROFILE)
    hits = retrieve_developer("FIXTURE_BACKUP_DIR", store=store, embedder=embedder, top_k=3,
                              strategy="hybrid")
    assert "faq-fixture-ops/BACKUPS.md" in [h.source_label for h in hits]

    class VectorOnly:
        index, profile = "developer", PROFILE

        def search(self, vector: np.ndarray, **_: object) -> list[StoreHit]:
            return []

    with pytest.raises(ConfigurationError, match="does not offer"):
        retrieve_developer("x", store=VectorOnly(), embedder=embedder, top_k=3,  # type: ignore[arg-type]
                           strategy="hybrid")
    # Adaptive: the identifier is read by its keywords too, with the keyword ranking first;
    # a store without keyword search answers it by vector instead of refusing.
    adaptive = retrieve_developer("FIXTURE_BACKUP_DIR", store=store, embedder=embedder,
                                  top_k=3, strategy="adaptive")
    assert adaptive[0].source_label == "faq-fixture-ops/BACKUPS.md"
    assert retrieve_developer("FIXTURE_BACKUP_DIR", store=VectorOnly(),  # type: ignore[arg-type]
                              embedder=embedder, top_k=3, strategy="adaptive") == []
    with pytest.raises(ConfigurationError, match="unknown documentation retrieval"):
        retrieve_developer("x", store=store, embedder=embedder, top_k=3,
                           strategy="graph")  # type: ignore[arg-type]


def test_hybrid_user_retrieval_keeps_filters_and_projection() -> None:
    setup = documentation.fixture_setup("user", strategy="hybrid")
    hits = retrieve_user("credit note administrator", store=setup.store,
                         embedder=setup.embedder, access=AccessContext(locale="en"),
                         policy=AudiencePolicy(), top_k=10, strategy="hybrid")
    labels = [h.source_label for h in hits]
    assert labels and all("administration" not in label for label in labels)
    assert all(set(h.metadata) <= {"audience", "heading_breadcrumb", "locale", "module",
                                   "safe_source_label", "version"} for h in hits)


def test_section_safe_labels() -> None:
    opted = {"safe_source_label": "Core · Glossary", "safe_label_sections": True}
    assert section_safe_label(opted, "Permission vs ACL") == "Core · Glossary · Permission vs ACL"
    assert section_safe_label(opted, None) is None
    assert section_safe_label({**opted, "safe_label_sections": "yes"}, "X") is None
    assert section_safe_label({"safe_source_label": "Core · Glossary"}, "X") is None


def test_the_splitter_labels_chunks_by_their_deepest_section() -> None:
    text = ("# Core module glossary\n\nIntro words.\n\n## Identity and access\n\nUsers.\n\n"
            "### Permission vs ACL\n\nA permission is a capability.\n\n## Search\n\nFind.\n")
    meta = {"safe_source_label": "Core · Glossary", "safe_label_sections": True}
    chunks = MarkdownAwareSplitter(max_words=200, overlap_words=0).split(
        Document("GLOSSARY.md", text, meta, "h"))
    assert [c.metadata["safe_source_label"] for c in chunks] == [
        "Core · Glossary", "Core · Glossary · Identity and access",
        "Core · Glossary · Permission vs ACL", "Core · Glossary · Search"]
    plain = MarkdownAwareSplitter(max_words=200, overlap_words=0).split(
        Document("G.md", text, {"safe_source_label": "G"}, "h"))
    assert {c.metadata["safe_source_label"] for c in plain} == {"G"}


def test_user_corpus_admits_fixture_pages() -> None:
    documents = read_sources({"": documentation.FIXTURE_CORPUS})
    admitted = {d.source for d in user_corpus(documents, AudiencePolicy())}
    assert admitted == {f"faq-fixture-help/{n}" for n in (
        "ACME_WORKSPACE_USER.md", "FATTURE_USER.md", "INVOICES_ADMIN_USER.md",
        "INVOICES_USER.md", "SEARCH_TIPS_USER.md")}

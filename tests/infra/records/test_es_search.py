"""Application search on Elasticsearch (the noida-db emulator, or a real cluster): the
search documents written from PostgreSQL's records are ranked by BM25 in the locale's
language and by kNN, filtered by tenant, returned in the requested locale, kept exact per
key range and key, and served through the same ``search_records`` as PostgreSQL's."""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence

import numpy as np
import pytest

from ragplate.catalog.entities import CMS_CONTENTS, SHIPPED
from ragplate.catalog.people import Person
from ragplate.catalog.profiles import EmbeddingProfile
from ragplate.catalog.settings import Settings
from ragplate.infra.elasticsearch import indexes
from ragplate.infra.records.engines import RecordSearch, make_record_search
from ragplate.infra.records.es_search import ElasticsearchRecords
from ragplate.infra.records.texts import SearchDocument
from ragplate.tasks.crud.service import CrudService
from ragplate.tasks.people.accounts import create_person
from ragplate.tasks.retrieval.application import search_records

ENTITY = SHIPPED[CMS_CONTENTS]
TINY = EmbeddingProfile(key="local:test/records", dimensions=4, local_variant="original")


def doc(key: int, locale: str, title: str, body: str, vector: Sequence[float] | None,
        tenant: str = "global") -> SearchDocument:
    return SearchDocument(str(key), locale, tenant, title, body, f"h{key}{locale}",
                          None if vector is None else np.asarray(vector, dtype=np.float32))


CORPUS = [
    doc(1, "en", "Rebuilding the index", "How to rebuild the search index", [1, 0, 0, 0]),
    doc(1, "it", "Ricostruire l'indice", "Come ricostruire l'indice di ricerca", [1, 0.1, 0, 0]),
    doc(2, "en", "Invoices", "Paying an invoice by card", [0, 1, 0, 0]),
    doc(3, "en", "Acme invoices", "Invoices of the acme tenant", [0.9, 0.2, 0, 0],
        tenant="acme"),
    doc(4, "it", "Solo italiano", "Fatture e pagamenti", [0.95, 0, 0.1, 0]),
    doc(5, "en", "No vector yet", "A record embedded later: rebuild", None),
]


@pytest.fixture
def records(es_settings: Settings) -> Iterator[ElasticsearchRecords]:
    index = ElasticsearchRecords(ElasticsearchRecords.from_settings(es_settings).client,
                                 prefix=f"rprec{uuid.uuid4().hex[:6]}")
    index.write(ENTITY, TINY, CORPUS)
    yield index
    for name in indexes.indexes_of(index.client, f"{index.prefix}_*"):
        indexes.delete_index(index.client, name)


def keys(hits: Sequence[object]) -> list[str]:
    return [h.record_key for h in hits]  # type: ignore[attr-defined]


def test_implements_record_search(records: ElasticsearchRecords) -> None:
    assert isinstance(records, RecordSearch)
    assert records.has_vectors(ENTITY, TINY.key) and not records.has_vectors(ENTITY, "other")
    assert records.count(ENTITY.name, TINY.key) == len(CORPUS)
    assert indexes.alias_targets(records.client, records.alias(ENTITY.name)) == [
        records.name(ENTITY.name, TINY.key)]


def test_keyword_search_reads_the_locale_and_filters_the_tenant(
    records: ElasticsearchRecords,
) -> None:
    found = records.keyword_hits(ENTITY, query="rebuilding", locale="en",
                                 tenants=["global"], limit=10)
    assert keys(found) == ["1", "5"] and found[0].title == "Rebuilding the index"
    italian = records.keyword_hits(ENTITY, query="ricostruisco", locale="it",
                                   tenants=["global"], limit=10)
    assert keys(italian) == ["1"] and italian[0].locale == "it"
    assert keys(records.keyword_hits(ENTITY, query="invoices", locale="en",
                                     tenants=["global"], limit=10)) == ["2"]
    assert set(keys(records.keyword_hits(ENTITY, query="invoices", locale="en",
                                         tenants=["global", "acme"], limit=10))) == {"2", "3"}
    assert keys(records.keyword_hits(ENTITY, query="rebuild -embedded", locale="en",
                                     tenants=["global"], limit=10)) == ["1"]


def test_vector_search_returns_the_requested_locale(records: ElasticsearchRecords) -> None:
    q = np.asarray([1, 0, 0, 0], dtype=np.float32)
    hits = records.vector_hits(ENTITY, profile=TINY, vector=q, locale="en",
                               tenants=["global"], limit=10)
    # Record 1 twice (its en and it vectors), in English; 4 has no English text; 3 is acme's.
    assert keys(hits) == ["1", "1", "2"]
    assert hits[0].title == "Rebuilding the index" and hits[0].score == pytest.approx(1.0)
    best = records.similarities(ENTITY, profile=TINY, vector=q, keys=["1", "4", "5"])
    assert set(best) == {"1", "4"} and best["1"] == pytest.approx(1.0)


def test_vector_search_leaves_out_records_holding_an_excluded_word(
    records: ElasticsearchRecords,
) -> None:
    q = np.asarray([1, 0, 0, 0], dtype=np.float32)
    hits = records.vector_hits(ENTITY, profile=TINY, vector=q, locale="en",
                               tenants=["global"], limit=10, excluded="rebuilding")
    # Record 1's English text is about rebuilding (stemmed as the keyword search reads it):
    # both its vectors go; 2 stays, in the nearest order.
    assert keys(hits) == ["2"]


def test_vector_search_widens_until_the_locale_has_enough_records(
    records: ElasticsearchRecords,
) -> None:
    """The locale is joined inside PostgreSQL's ranking: records with no text in it that
    sit nearest must not leave the asked-for locale's records out."""
    italian = [doc(100 + n, "it", f"t{n}", "corpo", [1, 0.001 * n, 0, 0]) for n in range(30)]
    records.write(ENTITY, TINY, [*italian, doc(200, "en", "Far", "far", [0.5, 0.5, 0, 0])],
                  keys=[str(100 + n) for n in range(30)] + ["200"])

    hits = records.vector_hits(ENTITY, profile=TINY, vector=np.asarray([1, 0, 0, 0]),
                               locale="en", tenants=["global"], limit=3)

    assert keys(hits) == ["1", "1", "200"]  # a row per vector, as PostgreSQL's query


def test_deleting_records_leaves_an_entity_with_a_longer_name_alone(
    records: ElasticsearchRecords,
) -> None:
    archive = ENTITY.model_copy(update={"name": "cms.contents_archive"})
    records.write(archive, TINY, [doc(2, "en", "Archived", "an archived invoice", [0, 1, 0, 0])])

    records.delete_records(ENTITY.name, ["2"])

    assert records.count(archive.name, TINY.key) == 1
    assert "2" not in keys(records.keyword_hits(ENTITY, query="invoice", locale="en",
                                                tenants=["global"], limit=5))


def test_writes_keep_a_key_range_and_a_key_exact(records: ElasticsearchRecords) -> None:
    records.write(ENTITY, TINY, [doc(2, "en", "Invoices v2", "Paid", [0, 1, 0, 0])],
                  low="2", high="4")  # record 3 is no longer searchable
    assert records.count(ENTITY.name, TINY.key) == len(CORPUS) - 1
    records.write(ENTITY, TINY, [], keys=["1"])  # record 1 unpublished
    assert records.count(ENTITY.name, TINY.key) == len(CORPUS) - 3
    assert records.delete_records(ENTITY.name, ["5"]) == 1
    assert keys(records.keyword_hits(ENTITY, query="invoices v2 paid", locale="en",
                                     tenants=None, limit=10)) == ["2"]


class Fixed:
    profile = TINY

    def embed_query(self, text: str) -> np.ndarray:
        return np.asarray([1, 0, 0, 0], dtype=np.float32)


def test_search_records_fuses_the_elasticsearch_rankings(
    records: ElasticsearchRecords, es_settings: Settings
) -> None:
    result = search_records(None, entity=CMS_CONTENTS, query="rebuild index",  # type: ignore[arg-type]
                            mode="balanced", locale="en", serving=TINY,
                            embedder_factory=Fixed, settings=es_settings, records=records)
    assert result.meta.mode == "balanced" and result.meta.degraded_reason is None
    assert [h.id for h in result.hits][:1] == ["1"]
    assert set(result.per_strategy) == {"keyword", "vector", "hybrid"}
    assert all(h.similarity is not None for h in result.hits if h.id != "5")
    fast = search_records(None, entity=CMS_CONTENTS, query="rebuild", mode="fast",  # type: ignore[arg-type]
                          locale="en", serving=None, embedder_factory=None,
                          settings=es_settings, records=records)
    assert [h.id for h in fast.hits] == ["1", "5"] and fast.meta.strategies == ["keyword"]


def test_the_url_chooses_elasticsearch(es_settings: Settings) -> None:
    assert isinstance(make_record_search(es_settings, None), ElasticsearchRecords)


@pytest.fixture
def crud_index(es_settings: Settings) -> Iterator[ElasticsearchRecords]:
    """An empty application-search index set for CRUD writes, dropped afterwards."""
    index = ElasticsearchRecords(ElasticsearchRecords.from_settings(es_settings).client,
                                 prefix=f"rpcrud{uuid.uuid4().hex[:6]}")
    yield index
    for name in indexes.indexes_of(index.client, f"{index.prefix}_*"):
        indexes.delete_index(index.client, name)


def crud_service(engine: object, embedder: object, index: ElasticsearchRecords,
                 **options: object) -> CrudService:
    return CrudService(engine=engine, embedder_for=lambda profile: embedder,  # type: ignore[arg-type]
                       search_index=index, **options)  # type: ignore[arg-type]


def content_editor(engine: object) -> Person:
    """A person of tenant ``acme`` who may read and write contents."""
    return create_person(engine, name=f"es-{uuid.uuid4().hex[:12]}", tenant="acme",  # type: ignore[arg-type]
                         permissions=["cms.contents.read", "cms.contents.create",
                                      "cms.contents.update", "cms.contents.delete"])


def publish(service: CrudService, editor: Person, title: str, body: str) -> str:
    """Create a published English content; its key."""
    created = service.create(editor, entity="cms.contents", payload={
        "locale": "en", "title": title, "body": body, "status": "published"}).record
    assert created is not None
    return str(created["id"])


@pytest.mark.integration
def test_crud_writes_keep_the_search_documents_in_step(
    crud_index: ElasticsearchRecords, engine: object, embedder: object
) -> None:
    """A CRUD write on the session's PostgreSQL writes its record's documents in the
    serving model's index; unpublishing and deleting remove them."""
    from ragplate.infra.settings_store import active_profile_key

    index = crud_index
    service = crud_service(engine, embedder, index)
    editor = content_editor(engine)
    serving = active_profile_key(engine)  # type: ignore[arg-type]
    key = publish(service, editor, "Quokka care", "Feeding the quokkas.")
    try:
        found = index.keyword_hits(ENTITY, query="quokka", locale="en", tenants=["acme"],
                                   limit=5)
        assert keys(found) == [key] and index.count(ENTITY.name, serving) == 1
        assert index.has_vectors(ENTITY, serving)
        service.update(editor, entity="cms.contents", key=key, changes={"status": "draft"})
        assert index.keyword_hits(ENTITY, query="quokka", locale="en", tenants=["acme"],
                                  limit=5) == []
    finally:
        service.delete(editor, entity="cms.contents", key=key)
        assert index.count(ENTITY.name, serving) == 0


@pytest.mark.integration
def test_a_write_outside_the_embedded_modules_still_updates_the_search_documents(
    crud_index: ElasticsearchRecords, engine: object, embedder: object
) -> None:
    """``RAGPLATE_EMBEDDINGS_MODULES`` decides what is embedded on write, not what fast
    search shows: unpublishing a record of a module left out removes it from search."""
    index = crud_index
    every = crud_service(engine, embedder, index)
    limited = crud_service(engine, embedder, index, embeddings_modules=("support",))
    editor = content_editor(engine)
    key = publish(every, editor, "Wombat care", "Feeding wombats.")
    try:
        assert keys(index.keyword_hits(ENTITY, query="wombat", locale="en",
                                       tenants=["acme"], limit=5)) == [key]
        limited.update(editor, entity="cms.contents", key=key, changes={"status": "draft"})
        assert index.keyword_hits(ENTITY, query="wombat", locale="en", tenants=["acme"],
                                  limit=5) == []
    finally:
        every.delete(editor, entity="cms.contents", key=key)

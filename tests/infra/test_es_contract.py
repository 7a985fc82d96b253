"""Every request the Elasticsearch drivers send is one the published Elasticsearch 8.17 API
(``../shared/specs/elasticsearch.openapi.json``) accepts: each is checked before it leaves
(see ``tests/testing/elasticsearch.py``). Here: one run of every driver operation reaches
every operation the issue names, the mappings ragplate writes are valid index-creation
bodies, and a malformed body, an undeclared parameter or an unknown path is refused."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import numpy as np
import pytest

from ragplate.catalog.entities import CMS_CONTENTS, SHIPPED
from ragplate.catalog.settings import Settings
from ragplate.infra.elasticsearch import indexes, mappings
from ragplate.infra.es_analytics import ElasticsearchQueryLog
from ragplate.infra.model_storage import ElasticsearchModelStorage
from ragplate.infra.records.es_search import ElasticsearchRecords
from ragplate.infra.records.texts import SearchDocument
from ragplate.infra.stores.base import SearchFilters
from ragplate.infra.stores.elasticsearch import ElasticsearchStore
from tests.testing.document_store_contract import OTHER, TINY, Q, basic_items, load
from tests.testing.elasticsearch import ApiContract, ContractViolation, Target
from tests.testing.query_log_contract import record

#: The operations the drivers must send, each validated against the published API.
REQUIRED = {
    "PUT /{index}", "PUT /_bulk", "POST /{index}/_search", "POST /{index}/_delete_by_query",
    "POST /_aliases", "POST /{index}/_refresh", "POST /{index}/_count",
}


def test_every_driver_operation_is_one_the_published_api_accepts(
    es_target: Target, es_settings: Settings
) -> None:
    assert es_target.log is not None
    before = len(es_target.log.sent)
    prefix = f"rpcontract{uuid.uuid4().hex[:6]}"
    client = ElasticsearchStore.from_settings("x", TINY, es_settings).client
    try:
        store = ElasticsearchStore("developer", TINY, client, prefix=prefix)
        load(store, basic_items())
        store.replace_sources(basic_items()[:1], [store.sources()["a"]])
        filters = SearchFilters(audiences=("user",), tenant_scopes=("global",),
                                permissions=frozenset({"p"}), scope_module="m",
                                sources=("a",))
        store.search(Q, top_k=3, filters=filters, min_score=0.1)
        store.keyword_search("backflush", top_k=3, filters=filters,
                             label_key="safe_source_label")
        store.count()
        store.delete_sources(["b"])
        other = ElasticsearchStore("developer", OTHER, client, prefix=prefix)
        load(other, basic_items())
        records = ElasticsearchRecords(client, prefix=prefix)
        documents = [SearchDocument("1", "en", "global", "Title", "Body", "h",
                                    np.asarray([1, 0, 0, 0], dtype=np.float32))]
        records.write(SHIPPED[CMS_CONTENTS], TINY, documents, low="1", high="5")
        records.keyword_hits(SHIPPED[CMS_CONTENTS], query="title -x", locale="en",
                             tenants=["global"], limit=5)
        records.vector_hits(SHIPPED[CMS_CONTENTS], profile=TINY, vector=Q, locale="en",
                            tenants=["global"], limit=5)
        records.similarities(SHIPPED[CMS_CONTENTS], profile=TINY, vector=Q, keys=["1"])
        log = ElasticsearchQueryLog(client, f"{prefix}_rag_queries")
        log.person_exists = lambda user_id: True
        log.insert(record("ref"), user_id=1)
        log.read(since=datetime(2020, 1, 1, tzinfo=UTC))
        log.delete_refs(["ref"])
        storage = ElasticsearchModelStorage(client, prefix)
        assert storage.activate(OTHER.key)  # the aliases move to the other model's indexes
        sent = {s.operation for s in es_target.log.sent[before:]}
        assert sent >= REQUIRED, sorted(REQUIRED - sent)
        knn = [s.body for s in es_target.log.sent[before:]
               if s.operation == "POST /{index}/_search" and "knn" in (s.body or {})]
        assert knn and all("filter" in body["knn"] for body in knn)
    finally:
        for name in indexes.indexes_of(client, f"{prefix}_*"):
            indexes.delete_index(client, name)


@pytest.mark.parametrize("body", [
    mappings.documentation_mapping(index="user", model_key="m", dimensions=384,
                                   similarity="cosine"),
    mappings.records_mapping(entity="cms.contents", model_key="m", dimensions=64,
                             similarity="inner_product"),
    mappings.query_log_mapping(),
], ids=["documentation", "records", "rag_queries"])
def test_the_index_bodies_are_valid_index_creations(es_contract: ApiContract,
                                                    body: dict[str, object]) -> None:
    request = {"settings": mappings.settings_body(1, 1), "mappings": body}
    assert es_contract.check("PUT", "/ragplate_x", request) == "PUT /{index}"


@pytest.mark.parametrize(("method", "target", "body", "problem"), [
    ("POST", "/i/_search", {"knn": {"field": "embedding", "query_vectr": [1.0]}}, "query_vectr"),
    ("POST", "/i/_search", {"query": {"term": {"doc_type": "chunk"}}}, "expected object"),
    ("POST", "/i/_search", {"sort": [{"source": "asc"}]}, "sort"),
    ("POST", "/_aliases", {"actions": [{"move": {"index": "a", "alias": "b"}}]}, "actions"),
    ("PUT", "/i", {"mappings": {"properties": {"v": {"type": "dense_vector",
                                                      "dims": "many"}}}}, "properties"),
    ("POST", "/i/_delete_by_query?wait=true", {"query": {"match_all": {}}}, "wait"),
    ("POST", "/i/_nothing", None, "no such operation"),
], ids=["knn-misspelt", "term-shorthand", "sort-shorthand", "unknown-alias-action",
        "dims-not-a-number", "undeclared-parameter", "unknown-path"])
def test_a_malformed_request_fails(es_contract: ApiContract, method: str, target: str,
                                   body: object, problem: str) -> None:
    with pytest.raises(ContractViolation, match=problem):
        es_contract.check(method, target, body)

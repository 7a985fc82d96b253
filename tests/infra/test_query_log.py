"""The query-analytics stores: one contract on PostgreSQL's ``rag_queries`` table and on
Elasticsearch's ``{app}_rag_queries`` index (the noida-db emulator, or a real cluster),
plus the index's strict mapping refusing a field Elasticsearch side."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
import sqlalchemy as sa

from ragplate.catalog.errors import SearchEngineError
from ragplate.catalog.settings import Settings
from ragplate.infra.analytics import PostgresQueryLog, QueryLog, make_query_log
from ragplate.infra.elasticsearch import indexes
from ragplate.infra.es_analytics import ElasticsearchQueryLog
from tests.testing.query_log_contract import QueryLogContract, record


@pytest.mark.integration
class TestPostgresQueryLog(QueryLogContract):
    @pytest.fixture
    def query_log(self, engine: sa.Engine) -> QueryLog:
        return PostgresQueryLog(engine)


class TestElasticsearchQueryLog(QueryLogContract):
    @pytest.fixture
    def query_log(self, es_client: object) -> Iterator[QueryLog]:
        store = ElasticsearchQueryLog(es_client, f"rptest_rag_queries_{uuid.uuid4().hex[:8]}")  # type: ignore[arg-type]
        assert store.create(force=False) is True
        yield store
        indexes.delete_index(store.client, store.name)

    def test_the_mapping_is_strict_in_elasticsearch_too(self, query_log: QueryLog) -> None:
        assert isinstance(query_log, ElasticsearchQueryLog)
        mapping = query_log.client.indices.get_mapping(index=query_log.name)
        assert mapping[query_log.name]["mappings"]["dynamic"] == "strict"
        from ragplate.infra.elasticsearch.client import call

        with pytest.raises(SearchEngineError, match="strict_dynamic_mapping") as error:
            call(lambda: query_log.client.index(index=query_log.name,
                                                 document={"answer": "x"}), query_log.name)
        assert query_log.name in str(error.value)

    def test_a_missing_index_deletes_and_reads_nothing(self, es_client: object) -> None:
        store = ElasticsearchQueryLog(es_client, f"rptest_absent_{uuid.uuid4().hex[:8]}")  # type: ignore[arg-type]
        assert (store.delete_before(record("x")["logged_at"]), store.delete_refs(["x"]),
                store.read(since=None), store.exists()) == (0, 0, [], False)


def test_the_url_chooses_the_elasticsearch_store(es_settings: Settings) -> None:
    store = make_query_log(es_settings, None)
    prefix = es_settings.elasticsearch_index_prefix
    assert isinstance(store, ElasticsearchQueryLog) and store.name == f"{prefix}_rag_queries"

"""The query-analytics stores: one contract on PostgreSQL's ``rag_queries`` table and on
Elasticsearch's ``{app}_rag_queries`` index (the noida-db emulator, or a real cluster),
plus the index's strict mapping refusing a field Elasticsearch side."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator

import pytest
import sqlalchemy as sa
from pydantic import SecretStr

from ragplate.catalog.analytics import user_ref
from ragplate.catalog.errors import SearchEngineError
from ragplate.catalog.settings import Settings
from ragplate.infra.analytics import (
    PostgresQueryLog,
    QueryLog,
    insert_if_person,
    make_query_log,
)
from ragplate.infra.elasticsearch import indexes
from ragplate.infra.es_analytics import ElasticsearchQueryLog
from ragplate.infra.people import delete_person
from ragplate.tasks.people.accounts import Deleted, create_person, delete
from tests.testing.query_log_contract import QueryLogContract, record


@pytest.mark.integration
class TestPostgresQueryLog(QueryLogContract):
    @pytest.fixture
    def query_log(self, engine: sa.Engine) -> QueryLog:
        return PostgresQueryLog(engine)

    @pytest.fixture
    def user_id(self, engine: sa.Engine) -> int:
        return create_person(engine, name=f"ql-{uuid.uuid4().hex[:12]}").id

    @pytest.fixture
    def gone_id(self, engine: sa.Engine) -> int:
        person = create_person(engine, name=f"ql-gone-{uuid.uuid4().hex[:12]}")
        with engine.begin() as conn:
            delete_person(conn, person)
        return person.id

    def test_a_delete_waits_for_a_record_being_written_so_the_erasure_sees_it(
        self, engine: sa.Engine, settings: Settings
    ) -> None:
        """The person's row is locked by the write: ``users delete`` either waits for the
        record (then erases it) or wins (then nothing is written)."""
        key = "lock-test-key"
        keyed = settings.model_copy(update={"app_key": SecretStr(key)})
        person = create_person(engine, name=f"ql-race-{uuid.uuid4().hex[:12]}")
        done: list[Deleted] = []
        with engine.connect() as writer:
            transaction = writer.begin()
            assert insert_if_person(writer, record(user_ref(person.id, key)),
                                    user_id=person.id)
            thread = threading.Thread(target=lambda: done.append(
                delete(engine, name=person.name, settings=keyed)))
            thread.start()
            thread.join(1.5)
            assert thread.is_alive() and not done  # the delete waits for the record
            transaction.commit()
        thread.join(30)
        assert done and done[0].records_erased == 1
        with engine.connect() as conn:
            assert insert_if_person(conn, record("after"), user_id=person.id) is False


ALIVE, GONE = 7, 8


class TestElasticsearchQueryLog(QueryLogContract):
    @pytest.fixture
    def user_id(self) -> int:
        return ALIVE

    @pytest.fixture
    def gone_id(self) -> int:
        return GONE

    @pytest.fixture
    def query_log(self, es_client: object) -> Iterator[QueryLog]:
        store = ElasticsearchQueryLog(es_client, f"rptest_rag_queries_{uuid.uuid4().hex[:8]}",  # type: ignore[arg-type]
                                      person_exists=lambda user_id: user_id == ALIVE)
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


def test_without_a_way_to_ask_for_the_person_elasticsearch_writes_nothing(
        es_client: object) -> None:
    store = ElasticsearchQueryLog(es_client, f"rptest_noask_{uuid.uuid4().hex[:8]}")  # type: ignore[arg-type]
    assert store.insert(record("x"), user_id=ALIVE) is False and store.exists() is False

"""A reusable contract every query-analytics store (:class:`~ragplate.infra.analytics.
QueryLog`) must pass: PostgreSQL's table and Elasticsearch's index alike.

Subclass :class:`QueryLogContract` and provide the ``query_log`` fixture: a store of its
own when the driver can give one, or the shared one (every test writes its own user
references and reads only them); ``user_id`` (a person who exists) and ``gone_id`` (one
who does not) as the store sees people.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from ragplate.catalog.analytics import FIELDS, AnalyticsFieldError
from ragplate.infra.analytics import QueryLog


def record(ref: str, *, days_ago: float = 0.0, query: str | None = "q",
           **changes: Any) -> dict[str, Any]:
    """A record of exactly the field set."""
    return {"id": uuid.uuid4(), "logged_at": datetime.now(UTC) - timedelta(days=days_ago),
            "user_ref": ref, "tenant": "global", "profile": "in_app", "locale": "en",
            "query": query, "retrieved_count": 2, "citation_count": 2, "answered": True,
            "latency_ms": 12.5, "index": "user", **changes}


def mine(store: QueryLog, *refs: str) -> list[dict[str, Any]]:
    return [r for r in store.read(since=None) if r["user_ref"] in refs]


class QueryLogContract:
    """What every query-analytics store does."""

    @pytest.fixture
    def query_log(self) -> QueryLog:
        """Override: the store under test, created."""
        raise NotImplementedError

    @pytest.fixture
    def user_id(self) -> int:
        """Override: the id of a person who exists."""
        raise NotImplementedError

    @pytest.fixture
    def gone_id(self) -> int:
        """Override: the id of a person who no longer exists."""
        raise NotImplementedError

    @pytest.fixture
    def ref(self) -> str:
        return "ref-" + uuid.uuid4().hex

    def test_implements_the_protocol(self, query_log: QueryLog) -> None:
        assert isinstance(query_log, QueryLog) and query_log.name

    def test_a_record_reads_back_with_exactly_the_field_set(
        self, query_log: QueryLog, ref: str, user_id: int
    ) -> None:
        written = record(ref, query="Where is the invoice?")
        assert query_log.insert(written, user_id=user_id) is True
        [read] = mine(query_log, ref)
        assert tuple(sorted(read)) == tuple(sorted(FIELDS))
        assert read["id"] == written["id"] and read["query"] == "Where is the invoice?"
        assert abs((read["logged_at"] - written["logged_at"]).total_seconds()) < 0.01
        assert (read["answered"], read["retrieved_count"], read["latency_ms"]) == (True, 2, 12.5)

    def test_text_mode_off_stores_no_question(self, query_log: QueryLog, ref: str,
                                              user_id: int) -> None:
        query_log.insert(record(ref, query=None), user_id=user_id)
        assert [r["query"] for r in mine(query_log, ref)] == [None]

    def test_a_field_outside_the_set_is_refused_and_nothing_written(
        self, query_log: QueryLog, ref: str, user_id: int
    ) -> None:
        with pytest.raises(AnalyticsFieldError, match="answer"):
            query_log.insert(record(ref, answer="the whole answer"), user_id=user_id)
        assert mine(query_log, ref) == []

    def test_delete_before_keeps_the_window(self, query_log: QueryLog, ref: str,
                                            user_id: int) -> None:
        for days in (1, 29.5, 30.5, 90):
            query_log.insert(record(ref, days_ago=days), user_id=user_id)
        cutoff = datetime.now(UTC) - timedelta(days=30)
        assert query_log.delete_before(cutoff) >= 2
        kept = sorted(round((datetime.now(UTC) - r["logged_at"]).total_seconds() / 86400)
                      for r in mine(query_log, ref))
        assert kept == [1, 30]

    def test_delete_refs_deletes_only_theirs(self, query_log: QueryLog, ref: str,
                                             user_id: int) -> None:
        other = ref + "-other"
        for who in (ref, ref, other):
            query_log.insert(record(who), user_id=user_id)
        assert query_log.delete_refs([ref, "nobody"]) == 2
        assert query_log.delete_refs([]) == 0
        assert [r["user_ref"] for r in mine(query_log, ref, other)] == [other]

    def test_read_since_oldest_first(self, query_log: QueryLog, ref: str,
                                     user_id: int) -> None:
        for days in (3, 1, 2):
            query_log.insert(record(ref, days_ago=days), user_id=user_id)
        since = datetime.now(UTC) - timedelta(days=2.5)
        read = [r for r in query_log.read(since=since) if r["user_ref"] == ref]
        assert [round((datetime.now(UTC) - r["logged_at"]).days) for r in read] == [2, 1]

    def test_create_is_idempotent_and_force_loses_the_records(
        self, query_log: QueryLog, ref: str, user_id: int
    ) -> None:
        query_log.insert(record(ref), user_id=user_id)
        assert query_log.create(force=False) is False
        assert mine(query_log, ref)
        assert query_log.create(force=True) is True
        assert mine(query_log, ref) == []

    def test_a_record_of_a_person_who_is_gone_is_not_written(
        self, query_log: QueryLog, ref: str, user_id: int, gone_id: int
    ) -> None:
        assert query_log.insert(record(ref), user_id=gone_id) is False
        assert mine(query_log, ref) == []
        assert query_log.insert(record(ref), user_id=user_id) is True

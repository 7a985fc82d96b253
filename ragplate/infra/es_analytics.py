"""The query analytics in Elasticsearch: the ``{app}_rag_queries`` index (the
:class:`~ragplate.infra.analytics.QueryLog` protocol), its mapping ``dynamic: strict``, so
a field outside the privacy review's list is refused by Elasticsearch as well as before
anything is sent. A record's ``id`` is its document id; the index is created with its
mapping on the first write, never left for Elasticsearch to guess.

A record is written only when its person still exists in PostgreSQL, asked just before the
write (``person_exists``). Unlike PostgreSQL's locked ``INSERT … WHERE EXISTS``, this leaves
a window of one request: a person deleted and erased between the check and the write keeps
that one record, which ``ragplate analytics erase ID --id`` removes."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ragplate.catalog.analytics import FIELDS, check_fields
from ragplate.infra.elasticsearch import indexes, mappings
from ragplate.infra.elasticsearch.client import call, call_or_none

if TYPE_CHECKING:
    from elasticsearch import Elasticsearch

    from ragplate.catalog.settings import Settings

_PAGE = 1000


class ElasticsearchQueryLog:
    """:class:`~ragplate.infra.analytics.QueryLog` on one Elasticsearch index."""

    def __init__(self, client: Elasticsearch, name: str, *, shards: int = 1,
                 replicas: int = 1,
                 person_exists: Callable[[int], bool] | None = None) -> None:
        self.client = client
        self.name = name
        #: Whether a person still exists (PostgreSQL); without it nothing is written.
        self.person_exists = person_exists
        self._settings = {"number_of_shards": shards, "number_of_replicas": replicas}
        self.recreate = "ragplate analytics create-store --force"

    @classmethod
    def from_settings(cls, settings: Settings, *,
                      person_exists: Callable[[int], bool] | None = None
                      ) -> ElasticsearchQueryLog:
        """The configured index on the configured cluster."""
        from ragplate.infra.elasticsearch.client import connect

        return cls(connect(settings), settings.query_log_index,
                   shards=settings.elasticsearch_shards, replicas=settings.elasticsearch_replicas,
                   person_exists=person_exists)

    def _ensure(self) -> None:
        indexes.ensure_index(self.client, self.name, settings=self._settings,
                             mappings=mappings.query_log_mapping(), recreate=self.recreate)

    def exists(self) -> bool:
        """Whether the index exists."""
        return indexes.index_meta(self.client, self.name) is not None

    def create(self, *, force: bool) -> bool:
        """See :class:`~ragplate.infra.analytics.QueryLog`."""
        if self.exists():
            if not force:
                return False
            indexes.delete_index(self.client, self.name)
        self._ensure()
        return True

    def insert(self, record: Mapping[str, Any], *, user_id: int) -> bool:
        """See :class:`~ragplate.infra.analytics.QueryLog`: the person is looked up in
        PostgreSQL just before the write (fail closed: not written without a way to)."""
        check_fields(dict(record))
        if self.person_exists is None or not self.person_exists(user_id):
            return False
        self._ensure()
        doc = {key: _plain(value) for key, value in record.items()}
        call(lambda: self.client.index(index=self.name, id=str(doc["id"]), document=doc,
                                       op_type="create"), self.name, recreate=self.recreate)
        return True

    def _delete(self, query: dict[str, Any]) -> int:
        found = call_or_none(lambda: self.client.delete_by_query(
            index=self.name, query=query, conflicts="proceed", refresh=True), self.name)
        return 0 if found is None else int(found["deleted"])

    def _refresh(self) -> bool:
        return call_or_none(lambda: self.client.indices.refresh(index=self.name),
                            self.name) is not None

    def delete_before(self, cutoff: datetime) -> int:
        """See :class:`~ragplate.infra.analytics.QueryLog`."""
        if not self._refresh():
            return 0
        return self._delete({"range": {"logged_at": {"lt": cutoff.isoformat()}}})

    def delete_refs(self, refs: Sequence[str]) -> int:
        """See :class:`~ragplate.infra.analytics.QueryLog`."""
        if not refs or not self._refresh():
            return 0
        return self._delete({"terms": {"user_ref": sorted(set(refs))}})

    def read(self, *, since: datetime | None) -> list[dict[str, Any]]:
        """See :class:`~ragplate.infra.analytics.QueryLog` (paged by ``search_after``)."""
        if not self._refresh():
            return []
        query: dict[str, Any] = ({"match_all": {}} if since is None else
                                 {"range": {"logged_at": {"gte": since.isoformat()}}})
        records: list[dict[str, Any]] = []
        after: list[Any] | None = None
        while True:
            extra: dict[str, Any] = {} if after is None else {"search_after": after}
            page = call(lambda extra=extra: self.client.search(  # type: ignore[misc]
                index=self.name, query=query, size=_PAGE, sort=["logged_at", "id"],
                **extra), self.name)
            hits = page["hits"]["hits"]
            records += [_record(hit["_source"]) for hit in hits]
            if len(hits) < _PAGE:
                return records
            after = hits[-1]["sort"]


def _plain(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, uuid.UUID):
        return str(value)
    return value


def _record(source: dict[str, Any]) -> dict[str, Any]:
    """A stored document as the PostgreSQL store returns a row: every field, ``id`` a
    UUID and ``logged_at`` an aware datetime."""
    record = {name: source.get(name) for name in FIELDS}
    record["id"] = uuid.UUID(str(record["id"]))
    record["logged_at"] = datetime.fromisoformat(str(record["logged_at"]))
    return record

"""Reading the words of stored chunks again, for the Elasticsearch store: after a release
that reads words otherwise (see :func:`~ragplate.infra.stores.word_counts.reading_mark`),
or for chunks written before they carried their words, each chunk's ``terms`` field is
written again from its stored text by a partial update (its vector is neither read nor
written)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ragplate.infra.elasticsearch.bulk import bulk
from ragplate.infra.elasticsearch.client import call, call_or_none
from ragplate.infra.elasticsearch.queries import term
from ragplate.infra.stores.word_counts import counted_terms, reading_mark

if TYPE_CHECKING:
    from elasticsearch import Elasticsearch

#: Chunks read and updated per page.
PAGE = 500


def _stale(mark: str) -> dict[str, Any]:
    """The chunks that do not hold the mark of the current reading (nor, written before
    the field, any term)."""
    return {"bool": {"filter": [term("doc_type", "chunk")],
                     "must_not": [term("terms", mark)]}}


def stale_chunks(client: Elasticsearch, name: str) -> int:
    """How many chunks of the index ``name`` the current reading did not count."""
    found = call_or_none(lambda: client.count(index=name, query=_stale(reading_mark())),
                         name)
    return 0 if found is None else int(found["count"])


def recount(client: Elasticsearch, name: str, *, retries: int,
            recreate: str | None = None) -> int:
    """Write again the ``terms`` of every chunk of ``name`` the current reading did not
    count, a page at a time (paged by ``search_after`` over source, ordinal and
    generation, an order updates do not move); returns the chunks updated."""
    query, after, done = _stale(reading_mark()), None, 0
    while True:
        extra: dict[str, Any] = {} if after is None else {"search_after": after}
        page = call_or_none(lambda extra=extra: client.search(  # type: ignore[misc]
            index=name, query=query, size=PAGE, sort=["source", "ordinal", "generation"],
            source_includes=["source", "text", "metadata"], **extra), name)
        hits = [] if page is None else page["hits"]["hits"]
        if hits:
            # A chunk a concurrent write replaced is gone (404): nothing to count again.
            done += bulk(client, ({"_op_type": "update", "_index": name, "_id": hit["_id"],
                                   "retry_on_conflict": 3,
                                   "doc": {"terms": _terms(hit["_source"])}}
                                  for hit in hits), index=name, retries=retries,
                         recreate=recreate, skip_missing=True)
        if len(hits) < PAGE:
            if done:
                call(lambda: client.indices.refresh(index=name), name)
            return done
        after = hits[-1]["sort"]


def _terms(source: dict[str, Any]) -> list[str]:
    metadata = source.get("metadata")
    return counted_terms(str(source.get("source", "")), str(source.get("text", "")),
                         metadata if isinstance(metadata, dict) else {})

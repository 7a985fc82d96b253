"""Bulk writes with back-off: items a busy cluster refuses with 429 are sent again (up to
``RAGPLATE_ELASTICSEARCH_RETRIES`` times, waiting 0.5 s, 1 s, 2 s…); any other refused
item fails the write with one line naming the index and the first reason."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from ragplate.catalog.errors import IndexMappingError, SearchEngineError
from ragplate.infra.elasticsearch.client import call

if TYPE_CHECKING:
    from elasticsearch import Elasticsearch

#: Actions per ``_bulk`` request.
CHUNK = 500
_MAPPING = ("strict_dynamic_mapping_exception", "document_parsing_exception",
            "mapper_parsing_exception", "illegal_argument_exception")


def bulk(client: Elasticsearch, actions: Iterable[dict[str, Any]], *, index: str,
         retries: int, recreate: str | None = None, skip_missing: bool = False) -> int:
    """Send ``actions`` (``helpers.bulk`` actions with ``_index``); returns the items
    written. Refused items other than 429 raise after the rest were sent; with
    ``skip_missing``, an update of a document deleted meanwhile (404) is skipped."""
    from elasticsearch import helpers

    def run() -> tuple[int, list[dict[str, Any]]]:
        written, failed = 0, []
        for ok, item in helpers.streaming_bulk(
                client, actions, chunk_size=CHUNK, max_retries=retries, initial_backoff=0.5,
                max_backoff=30, raise_on_error=False, raise_on_exception=True):
            if ok:
                written += 1
            else:
                failed.append(item)
        return written, failed

    written, failed = call(run, index, recreate=recreate)
    if skip_missing:
        failed = [item for item in failed if _status(item) != 404]
    if failed:
        first = next(iter(failed[0].values()))
        error = first.get("error", {}) if isinstance(first, dict) else {}
        kind = error.get("type") if isinstance(error, dict) else None
        why = error.get("reason") if isinstance(error, dict) else error
        status = first.get("status") if isinstance(first, dict) else None
        line = (f"Elasticsearch index {index}: {len(failed)} of {len(failed) + written} "
                f"bulk items refused (status {status}, {kind}: {why})")
        if kind in _MAPPING:
            hint = f"; recreate it with `{recreate}`" if recreate else ""
            raise IndexMappingError(line + hint)
        raise SearchEngineError(line)
    return written


def _status(item: dict[str, Any]) -> Any:
    """The HTTP status of one refused bulk item (``{"update": {"status": 404, …}}``)."""
    first = next(iter(item.values()), None)
    return first.get("status") if isinstance(first, dict) else None

"""Reading the words of stored chunks again, for the pgvector store: after a release that
reads words otherwise (another stemmer or stop-word list, see
:func:`~ragplate.infra.stores.word_counts.reading_mark`), the chunks' ``terms`` are
written again from their stored text, with no re-embedding; migration 0016's triggers
count them again as each batch is written."""

from __future__ import annotations

import json
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

import sqlalchemy as sa

from ragplate.infra.stores.pg_keyword import TERM_COUNTS_SQL
from ragplate.infra.stores.word_counts import counted_terms, reading_mark

#: Chunks read and written back per transaction: each holds the index's count lock, so a
#: search or a write of the same index waits for one batch at most, not the whole recount.
BATCH = 500

_STALE = (
    "SELECT id, source, text, metadata FROM rag_chunks "
    "WHERE index_name = :i AND model_key = :k AND id > :after "
    "AND (terms IS NULL OR NOT terms @> ARRAY[CAST(:mark AS text)]) "
    "ORDER BY id LIMIT :n FOR UPDATE"
)
# One statement per batch: the counting triggers run once per statement.
_UPDATE = sa.text(
    "UPDATE rag_chunks AS c SET terms = v.terms "
    "FROM jsonb_to_recordset(CAST(:rows AS jsonb)) AS v(id bigint, terms text[]) "
    "WHERE c.id = v.id"
)


def stale_chunks(conn: sa.Connection, index: str, model_key: str) -> int:
    """How many chunks of one (index, model) the current reading did not count: one
    lookup in the counts, whatever the index's size."""
    mark = reading_mark()
    rows = conn.execute(sa.text(TERM_COUNTS_SQL),
                        {"i": index, "k": model_key, "terms": ["", mark]}).all()
    found = {str(r.term): int(r.chunks) for r in rows}
    return max(0, found.get("", 0) - found.get(mark, 0))


def recount(transaction: Callable[[], AbstractContextManager[sa.Connection]],
            lock: Callable[[sa.Connection], None], index: str, model_key: str) -> int:
    """Write the terms of every chunk of one (index, model) that the current reading did
    not count, a batch per ``transaction()`` (each first taking ``lock``); returns the
    chunks read again. A chunk written meanwhile by the current release is skipped: it
    holds the mark already."""
    mark, after, done = reading_mark(), 0, 0
    while True:
        with transaction() as conn:
            lock(conn)
            rows = conn.execute(sa.text(_STALE), {"i": index, "k": model_key,
                                                  "after": after, "mark": mark,
                                                  "n": BATCH}).all()
            if not rows:
                return done
            conn.execute(_UPDATE, {"rows": json.dumps([
                {"id": r.id, "terms": counted_terms(r.source, r.text, _metadata(r.metadata))}
                for r in rows], ensure_ascii=False)})
        after, done = rows[-1].id, done + len(rows)


def _metadata(value: Any) -> dict[str, Any]:
    # Metadata is a JSON object as written; a row written otherwise reads as none.
    return value if isinstance(value, dict) else {}

"""Per-index word counts for the assistant's coverage check: ``rag_chunks.terms`` and
``rag_term_counts``.

The coverage check weighs a question's words by how many chunks hold them. It stemmed the
question in Python and counted the words in the generated ``search`` column, as PostgreSQL
had parsed them, with one query per word: where the two read a word differently (a path or
a version PostgreSQL keeps whole, a stem of another Snowball release) the word counted as
held by no chunk, and a common word cost a scan of every chunk holding it.

Each chunk now stores its distinct words as ragplate reads them (``terms``, written with
the chunk), and ``rag_term_counts`` holds, per (index, model) and word, how many chunks hold
it (under the empty word: how many chunks the index holds). Statement triggers on
``rag_chunks`` keep the counts: every path that inserts or deletes chunks (indexing,
``sources remove``, pruning a model, a reset) keeps them exact in its own transaction.
The chunks stored before are read once here (no re-embedding).

Revision ID: 0016
Revises: 0015
"""

from __future__ import annotations

import logging

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import ARRAY

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None

logger = logging.getLogger(__name__)

#: Chunks read and written back per statement while the stored chunks are counted.
BATCH = 2000

# Each chunk once under the empty word (no word is empty): the index's chunk count, read
# with the words' counts in one lookup.
_WORDS = """
    SELECT c.index_name, c.model_key, t.term
    FROM {rows} AS c CROSS JOIN LATERAL unnest(c.terms) AS t(term)
    UNION ALL SELECT c.index_name, c.model_key, '' FROM {rows} AS c
"""

_COUNT = """
INSERT INTO rag_term_counts (index_name, model_key, term, chunks)
SELECT index_name, model_key, term, count(*) FROM ({words}) AS w
GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
ON CONFLICT (index_name, model_key, term)
DO UPDATE SET chunks = rag_term_counts.chunks + excluded.chunks
"""

# The rows a statement removed, counted down; a word no chunk holds any more goes. (The
# two parts touch disjoint rows: a statement's parts see one snapshot, so a row updated
# by one part cannot be deleted by another.)
_UNCOUNT = """
WITH gone AS (
    SELECT index_name, model_key, term, count(*) AS n FROM ({words}) AS w
    GROUP BY 1, 2, 3
), emptied AS (
    DELETE FROM rag_term_counts AS r USING gone
    WHERE r.index_name = gone.index_name AND r.model_key = gone.model_key
      AND r.term = gone.term AND r.chunks <= gone.n
)
UPDATE rag_term_counts AS r SET chunks = r.chunks - gone.n
FROM gone
WHERE r.index_name = gone.index_name AND r.model_key = gone.model_key
  AND r.term = gone.term AND r.chunks > gone.n
"""



def _counting(rows: str) -> str:
    return _COUNT.format(words=_WORDS.format(rows=rows))


def _uncounting(rows: str) -> str:
    return _UNCOUNT.format(words=_WORDS.format(rows=rows))


_FUNCTIONS = {
    "rag_term_counts_insert": _counting("new_rows"),
    "rag_term_counts_delete": _uncounting("old_rows"),
    "rag_term_counts_update": _uncounting("old_rows") + ";\n" + _counting("new_rows"),
}
_TRIGGERS = {
    "rag_term_counts_insert": "AFTER INSERT ON rag_chunks REFERENCING NEW TABLE AS new_rows",
    "rag_term_counts_delete": "AFTER DELETE ON rag_chunks REFERENCING OLD TABLE AS old_rows",
    "rag_term_counts_update": ("AFTER UPDATE ON rag_chunks "
                               "REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows"),
}


def upgrade() -> None:
    op.add_column("rag_chunks", sa.Column("terms", ARRAY(sa.Text), nullable=True))
    op.create_table(
        "rag_term_counts",
        sa.Column("index_name", sa.Text, primary_key=True),
        sa.Column("model_key", sa.Text, primary_key=True),
        sa.Column("term", sa.Text, primary_key=True),
        sa.Column("chunks", sa.Integer, nullable=False),
    )
    _count_stored_chunks()
    op.execute(_counting("rag_chunks"))
    for name, body in _FUNCTIONS.items():
        op.execute(f"CREATE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $$\n"
                   f"BEGIN\n{body};\nRETURN NULL;\nEND\n$$")
        op.execute(f"CREATE TRIGGER {name} {_TRIGGERS[name]} FOR EACH STATEMENT "
                   f"EXECUTE FUNCTION {name}()")


def _count_stored_chunks() -> None:
    """Write each stored chunk's words, read as the release that runs this reads them
    (the same function its writes use)."""
    from ragplate.infra.stores.lexical import term_counts

    conn = op.get_bind()
    select = sa.text("SELECT id, source, text, metadata FROM rag_chunks "
                     "WHERE id > :after ORDER BY id LIMIT :n")
    update = sa.text("UPDATE rag_chunks SET terms = :terms WHERE id = :id")
    after, done = 0, 0
    while True:
        rows = conn.execute(select, {"after": after, "n": BATCH}).all()
        if not rows:
            break
        conn.execute(update, [{"id": r.id, "terms": sorted(term_counts(
            r.source, r.text, r.metadata or {}))} for r in rows])
        after, done = rows[-1].id, done + len(rows)
    if done:
        logger.info("counted the words of %d stored documentation chunks", done)


def downgrade() -> None:
    for name in _FUNCTIONS:
        op.execute(f"DROP TRIGGER IF EXISTS {name} ON rag_chunks")
        op.execute(f"DROP FUNCTION IF EXISTS {name}()")
    op.drop_table("rag_term_counts")
    op.drop_column("rag_chunks", "terms")

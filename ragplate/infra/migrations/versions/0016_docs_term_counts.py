"""Per-index word counts for the assistant's coverage check: ``rag_chunks.terms`` and
``rag_term_counts``.

The coverage check weighs a question's words by how many chunks hold them. It stemmed the
question in Python and counted the words in the generated ``search`` column, as PostgreSQL
had parsed them, with one query per word: where the two read a word differently (a path or
a version PostgreSQL keeps whole, a stem of another Snowball release) the word counted as
held by no chunk, and a common word cost a scan of every chunk holding it.

Each chunk now stores the terms it is counted under (``terms``, written with the chunk:
its distinct words as the assistant reads them, ``""`` and the mark of that reading, see
``ragplate.infra.stores.word_counts``), and ``rag_term_counts`` holds, per (index, model)
and term, how many chunks hold it. Statement triggers on ``rag_chunks`` keep the counts on
every insert, delete, update and truncate, whatever the path (indexing, ``sources
remove``, pruning a model, a reset, the switch); each first takes a lock per (index,
model) it touches, in one order, so that two transactions writing one index count one
after the other instead of losing each other's counts or deadlocking.

The chunks stored before are read once here (no re-embedding): about 36 s for 20,000 chunks
with their HNSW index on a busy 2-core machine (10 s without one; dropping the index and
building it again after was no faster), during which the table is locked.

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
#: The first key of the per-(index, model) transaction locks the triggers take (the
#: second is the pair's hash); the stores' own locks take one key, another lock space.
LOCK_SPACE = 7311

_LOCK = """
PERFORM pg_advisory_xact_lock({space}, hashtext(p.index_name || '/' || p.model_key))
FROM (SELECT DISTINCT index_name, model_key FROM {rows} ORDER BY 1, 2) AS p
"""

_COUNT = """
INSERT INTO rag_term_counts (index_name, model_key, term, chunks)
SELECT c.index_name, c.model_key, t.term, count(*)
FROM {rows} AS c CROSS JOIN LATERAL unnest(c.terms) AS t(term)
GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
ON CONFLICT (index_name, model_key, term)
DO UPDATE SET chunks = rag_term_counts.chunks + excluded.chunks
"""

# The rows a statement removed, counted down; a term no chunk holds any more goes. (The
# two parts touch disjoint rows: a statement's parts see one snapshot. The lock taken
# before, in a statement of its own, makes that snapshot hold every count committed.)
_UNCOUNT = """
WITH gone AS (
    SELECT c.index_name, c.model_key, t.term, count(*) AS n
    FROM {rows} AS c CROSS JOIN LATERAL unnest(c.terms) AS t(term)
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


def _body(*statements: str) -> str:
    return ";\n".join(s.strip() for s in statements) + ";"


_FUNCTIONS = {
    "rag_term_counts_insert": _body(_LOCK.format(space=LOCK_SPACE, rows="new_rows"),
                                    _COUNT.format(rows="new_rows")),
    "rag_term_counts_delete": _body(_LOCK.format(space=LOCK_SPACE, rows="old_rows"),
                                    _UNCOUNT.format(rows="old_rows")),
    "rag_term_counts_update": _body(
        _LOCK.format(space=LOCK_SPACE, rows="(SELECT index_name, model_key FROM old_rows "
                     "UNION SELECT index_name, model_key FROM new_rows) AS u"),
        _UNCOUNT.format(rows="old_rows"), _COUNT.format(rows="new_rows")),
    "rag_term_counts_truncate": "DELETE FROM rag_term_counts;",
}
_TRIGGERS = {
    "rag_term_counts_insert": "AFTER INSERT ON rag_chunks REFERENCING NEW TABLE AS new_rows",
    "rag_term_counts_delete": "AFTER DELETE ON rag_chunks REFERENCING OLD TABLE AS old_rows",
    "rag_term_counts_update": ("AFTER UPDATE ON rag_chunks "
                               "REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows"),
    "rag_term_counts_truncate": "AFTER TRUNCATE ON rag_chunks",
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
    op.execute(_COUNT.format(rows="rag_chunks"))
    for name, body in _FUNCTIONS.items():
        op.execute(f"CREATE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $$\n"
                   f"BEGIN\n{body}\nRETURN NULL;\nEND\n$$")
        op.execute(f"CREATE TRIGGER {name} {_TRIGGERS[name]} FOR EACH STATEMENT "
                   f"EXECUTE FUNCTION {name}()")


def _count_stored_chunks() -> None:
    """Write each stored chunk's terms, read as the release that runs this reads them
    (the same function its writes use)."""
    from ragplate.infra.stores.word_counts import counted_terms

    conn = op.get_bind()
    select = sa.text("SELECT id, source, text, metadata FROM rag_chunks "
                     "WHERE id > :after ORDER BY id LIMIT :n")
    update = sa.text("UPDATE rag_chunks SET terms = :terms WHERE id = :id")
    after, done = 0, 0
    while True:
        rows = conn.execute(select, {"after": after, "n": BATCH}).all()
        if not rows:
            break
        conn.execute(update, [{"id": r.id, "terms": counted_terms(
            r.source, r.text, r.metadata if isinstance(r.metadata, dict) else {})}
            for r in rows])
        after, done = rows[-1].id, done + len(rows)
    if done:
        logger.info("counted the words of %d stored documentation chunks", done)


def downgrade() -> None:
    for name in _FUNCTIONS:
        op.execute(f"DROP TRIGGER IF EXISTS {name} ON rag_chunks")
        op.execute(f"DROP FUNCTION IF EXISTS {name}()")
    op.drop_table("rag_term_counts")
    op.drop_column("rag_chunks", "terms")

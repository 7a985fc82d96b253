"""Keyword search reads at most the first 100,000 characters of a documentation chunk.

A tsvector holds at most 1 MB. A chunk carrying an inline base64 image of a few hundred KB
(one "word" the splitter cannot cut) produced a longer one, so writing that chunk failed
and with it every indexing run. The generated ``rag_chunks.search`` now reads
``left(text, 100000)``: the column is recomputed for the rows already stored, and nothing
needs re-embedding.

Revision ID: 0007
Revises: 0006
"""

from alembic import op

# Kept literal (not imported from the catalog) so this revision never changes after release;
# ragplate.catalog.schema.DOCS_SEARCH_VECTOR must stay equal (a test checks it).
DOCS_SEARCH_VECTOR = (
    "setweight(to_tsvector('english'::regconfig, translate(source, '/_.-', '    ') || ' ' "
    "|| coalesce(metadata->>'heading_breadcrumb', '')), 'A') "
    "|| setweight(to_tsvector('english'::regconfig, left(text, 100000)), 'D')"
)
PREVIOUS = (
    "setweight(to_tsvector('english'::regconfig, translate(source, '/_.-', '    ') || ' ' "
    "|| coalesce(metadata->>'heading_breadcrumb', '')), 'A') "
    "|| setweight(to_tsvector('english'::regconfig, text), 'D')"
)

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def _search_column(expression: str) -> None:
    op.execute("DROP INDEX IF EXISTS ix_rag_chunks_search")
    op.execute("ALTER TABLE rag_chunks DROP COLUMN IF EXISTS search")
    op.execute(f"ALTER TABLE rag_chunks ADD COLUMN search tsvector "
               f"GENERATED ALWAYS AS ({expression}) STORED")
    op.execute("CREATE INDEX ix_rag_chunks_search ON rag_chunks USING gin (search)")


def upgrade() -> None:
    _search_column(DOCS_SEARCH_VECTOR)


def downgrade() -> None:
    _search_column(PREVIOUS)

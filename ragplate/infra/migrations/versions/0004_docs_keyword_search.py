"""Keyword search over documentation chunks: a generated tsvector and its GIN index.

``rag_chunks.search`` is computed by PostgreSQL from the chunk: the words of its source
label (``faq-module-AI/DEPLOYMENT.md`` -> ``faq module AI DEPLOYMENT md``) and of its
heading breadcrumb weigh A, its text weighs D, all with English stemming. Hybrid
documentation retrieval (``RAGPLATE_DOCS_RETRIEVAL=hybrid``) ranks chunks by BM25 over it
and fuses that ranking with the vector one. Adding the column computes it for the rows
already stored; nothing needs re-embedding.

Revision ID: 0004
Revises: 0003
"""

from alembic import op

# Kept literal (not imported from the catalog) so this revision never changes after release;
# ragplate.catalog.schema.DOCS_SEARCH_VECTOR must stay equal (a test checks it).
DOCS_SEARCH_VECTOR = (
    "setweight(to_tsvector('english'::regconfig, translate(source, '/_.-', '    ') || ' ' "
    "|| coalesce(metadata->>'heading_breadcrumb', '')), 'A') "
    "|| setweight(to_tsvector('english'::regconfig, text), 'D')"
)

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        f"ALTER TABLE rag_chunks ADD COLUMN search tsvector "
        f"GENERATED ALWAYS AS ({DOCS_SEARCH_VECTOR}) STORED"
    )
    op.execute("CREATE INDEX ix_rag_chunks_search ON rag_chunks USING gin (search)")


def downgrade() -> None:
    op.execute("DROP INDEX IF EXISTS ix_rag_chunks_search")
    op.execute("ALTER TABLE rag_chunks DROP COLUMN IF EXISTS search")

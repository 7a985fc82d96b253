"""Application content: ``cms.contents`` records and translations, ``model_embeddings``.

No vector index is created here: each model key gets its partial HNSW index on demand
(``ragplate.infra.records.vectors.ensure_model_index``).

Revision ID: 0002
Revises: 0001
"""

import sqlalchemy as sa
from alembic import op
from pgvector.sqlalchemy import Vector
from sqlalchemy.dialects.postgresql import TSVECTOR

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

# Kept literal (not imported from the catalog) so this revision never changes after release.
_SEARCH = "setweight(to_tsvector('simple', title), 'A') || to_tsvector('simple', body)"


def _timestamps() -> list[sa.Column]:
    return [
        sa.Column(
            "created_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.func.now()
        ),
        sa.Column(
            "updated_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.func.now()
        ),
    ]


def upgrade() -> None:
    op.create_table(
        "cms_contents",
        sa.Column("id", sa.BigInteger, sa.Identity(), primary_key=True),
        sa.Column("tenant", sa.Text, nullable=False, server_default="global"),
        sa.Column("status", sa.Text, nullable=False),
        *_timestamps(),
        sa.CheckConstraint(
            "status IN ('draft', 'published', 'archived')", name="ck_cms_contents_status"
        ),
    )
    op.create_table(
        "cms_content_translations",
        sa.Column(
            "content_id",
            sa.BigInteger,
            sa.ForeignKey("cms_contents.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("locale", sa.Text, primary_key=True),
        sa.Column("title", sa.Text, nullable=False),
        sa.Column("body", sa.Text, nullable=False),
        sa.Column("search", TSVECTOR, sa.Computed(_SEARCH, persisted=True)),
    )
    op.create_index(
        "ix_cms_content_translations_search",
        "cms_content_translations",
        ["search"],
        postgresql_using="gin",
    )
    op.create_table(
        "model_embeddings",
        sa.Column("id", sa.BigInteger, sa.Identity(), primary_key=True),
        sa.Column("entity", sa.Text, nullable=False),
        sa.Column("record_key", sa.Text, nullable=False),
        sa.Column("locale", sa.Text, nullable=False),
        sa.Column("model_key", sa.Text, nullable=False),
        sa.Column("text_hash", sa.Text, nullable=False),
        sa.Column("embedding", Vector(), nullable=False),
        sa.Column(
            "created_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.func.now()
        ),
        sa.UniqueConstraint(
            "entity", "record_key", "locale", "model_key", name="uq_model_embeddings_text"
        ),
    )
    op.create_index("ix_model_embeddings_model", "model_embeddings", ["model_key", "entity"])


def downgrade() -> None:
    # The per-model HNSW indexes go with the table.
    op.drop_table("model_embeddings")
    op.drop_table("cms_content_translations")
    op.drop_table("cms_contents")

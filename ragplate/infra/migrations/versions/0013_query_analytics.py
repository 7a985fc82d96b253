"""Documentation query analytics: the ``rag_queries`` store, and tokens that act as another
person (``api_tokens.impersonated_by``), whose questions are never logged.

Revision ID: 0013
Revises: 0012
"""

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None

metadata = sa.MetaData()

rag_queries = sa.Table(
    "rag_queries",
    metadata,
    sa.Column("id", sa.Uuid, primary_key=True),
    sa.Column("logged_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("user_ref", sa.Text, nullable=False),
    sa.Column("tenant", sa.Text, nullable=False),
    sa.Column("profile", sa.Text, nullable=False),
    sa.Column("locale", sa.Text, nullable=False),
    sa.Column("query", sa.Text, nullable=True),
    sa.Column("retrieved_count", sa.Integer, nullable=False),
    sa.Column("citation_count", sa.Integer, nullable=False),
    sa.Column("answered", sa.Boolean, nullable=False),
    sa.Column("latency_ms", sa.Float, nullable=False),
    sa.Column("index", sa.Text, nullable=False),
    sa.Index("ix_rag_queries_logged_at", "logged_at"),
    sa.Index("ix_rag_queries_user_ref", "user_ref"),
)


def upgrade() -> None:
    rag_queries.create(op.get_bind())
    op.add_column("api_tokens", sa.Column(
        "impersonated_by", sa.BigInteger, sa.ForeignKey("users.id", ondelete="CASCADE"),
        nullable=True))


def downgrade() -> None:
    op.drop_column("api_tokens", "impersonated_by")
    rag_queries.drop(op.get_bind())

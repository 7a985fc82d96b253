"""Record per documentation source how its vectors were made.

``rag_sources.vector_recipe`` holds the recipe name an index run stored the source's
vectors with (``document-context=1.0``, see ``RAGPLATE_DOCS_CONTEXT_WEIGHT``), so that an
evaluation report can say which vectors it measured. Sources stored earlier get ''
("not recorded") and keep their vectors; their next re-embedding records it.

Revision ID: 0005
Revises: 0004
"""

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column(
        "rag_sources",
        sa.Column("vector_recipe", sa.Text, nullable=False, server_default=""),
    )


def downgrade() -> None:
    op.drop_column("rag_sources", "vector_recipe")

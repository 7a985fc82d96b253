"""Record per documentation source the prefix of the root it was read from.

A run over some roots deletes the sources of those roots that disappeared. Which stored
sources belong to a root with an empty prefix could only be guessed from their labels
(any label not under another configured root), so such a run deleted the sources other
``--path`` runs had indexed under their own prefixes. With ``root_prefix`` recorded, a
run owns exactly the sources it indexed. Sources stored earlier get NULL (the label
rule still applies to them) until a run over their root records it.

Revision ID: 0006
Revises: 0005
"""

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("rag_sources", sa.Column("root_prefix", sa.Text, nullable=True))


def downgrade() -> None:
    op.drop_column("rag_sources", "root_prefix")

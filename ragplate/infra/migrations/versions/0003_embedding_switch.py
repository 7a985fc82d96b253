"""The embedding-model switch state: one row, written under an advisory lock.

``status`` and ``target`` are columns because other code reads them without the state
model (records edited during a switch are embedded with the target too); the rest of the
state (phase details, the chunk plan, counts) lives in ``data``.

Revision ID: 0003
Revises: 0002
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "embedding_switch",
        sa.Column("id", sa.SmallInteger, primary_key=True),
        sa.Column("status", sa.Text, nullable=False, server_default="idle"),
        sa.Column("phase", sa.Text, nullable=True),
        sa.Column("target", sa.Text, nullable=True),
        sa.Column("previous", sa.Text, nullable=True),
        sa.Column("data", JSONB, nullable=False, server_default=sa.text("'{}'::jsonb")),
        sa.Column(
            "updated_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.func.now()
        ),
        sa.CheckConstraint("id = 1", name="ck_embedding_switch_single_row"),
        sa.CheckConstraint(
            "status IN ('idle', 'running', 'failed')", name="ck_embedding_switch_status"
        ),
    )
    op.execute("INSERT INTO embedding_switch (id, status) VALUES (1, 'idle')")


def downgrade() -> None:
    op.drop_table("embedding_switch")

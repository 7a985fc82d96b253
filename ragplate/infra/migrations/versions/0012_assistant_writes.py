"""Writes through the assistant: the proposals a person confirms or rejects, and the audit
trail of every proposal and decision.

Revision ID: 0012
Revises: 0011
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None

# The tables are written out here, not imported from ragplate.catalog.schema, so this
# revision never changes after release; tests/infra/test_migrations.py checks that the
# migrated database and the catalog's schema stay the same.
metadata = sa.MetaData()

# Only what the foreign keys reference (migration 0009); they are not created here.
sa.Table("users", metadata, sa.Column("id", sa.BigInteger, primary_key=True))
sa.Table("conversations", metadata, sa.Column("id", sa.Uuid, primary_key=True))
sa.Table("messages", metadata, sa.Column("id", sa.Uuid, primary_key=True))

#: Writes the assistant proposed (migration 0012): the exact payload, the records a bulk
#: matched, a bounded summary, whether the write would wait for an approver, and the
#: person's decision. Nothing in a row is applied until its owner confirms it.
write_proposals = sa.Table(
    "write_proposals",
    metadata,
    sa.Column("id", sa.Uuid, primary_key=True, server_default=sa.text("gen_random_uuid()")),
    sa.Column("user_id", sa.BigInteger, sa.ForeignKey("users.id", ondelete="CASCADE"),
              nullable=False),
    sa.Column("conversation_id", sa.Uuid,
              sa.ForeignKey("conversations.id", ondelete="CASCADE"), nullable=False),
    sa.Column("message_id", sa.Uuid, sa.ForeignKey("messages.id", ondelete="CASCADE"),
              nullable=False),
    sa.Column("tool", sa.Text, nullable=False),
    sa.Column("entity", sa.Text, nullable=False),
    sa.Column("operation", sa.Text, nullable=False),
    sa.Column("record_keys", JSONB, nullable=False, server_default=sa.text("'[]'::jsonb")),
    sa.Column("payload", JSONB, nullable=False, server_default=sa.text("'{}'::jsonb")),
    sa.Column("payload_sha256", sa.Text, nullable=False),
    sa.Column("summary", sa.Text, nullable=False),
    sa.Column("requires_approval", sa.Boolean, nullable=False),
    sa.Column("status", sa.Text, nullable=False, server_default="proposed"),
    sa.Column("outcome", JSONB, nullable=False, server_default=sa.text("'{}'::jsonb")),
    sa.Column("idempotency_key", sa.Text, nullable=True),
    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False,
              server_default=sa.text("clock_timestamp()")),
    sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("resolved_at", sa.DateTime(timezone=True), nullable=True),
    sa.CheckConstraint("operation IN ('create', 'update', 'delete', 'bulk_update', "
                       "'bulk_delete')", name="ck_write_proposals_operation"),
    sa.CheckConstraint("status IN ('proposed', 'applied', 'pending_approval', 'failed', "
                       "'rejected', 'expired')", name="ck_write_proposals_status"),
    sa.Index("ix_write_proposals_user", "user_id", "created_at"),
)

#: What happened to each assistant write (migration 0012): who, in which conversation,
#: which tool, entity and operation, the payload's SHA-256 and the outcome; never a value.
#: No foreign key: the trail outlives the people and conversations it names.
assistant_write_audit = sa.Table(
    "assistant_write_audit",
    metadata,
    sa.Column("id", sa.BigInteger, sa.Identity(), primary_key=True),
    sa.Column("at", sa.DateTime(timezone=True), nullable=False,
              server_default=sa.text("clock_timestamp()")),
    sa.Column("event", sa.Text, nullable=False),
    sa.Column("actor_id", sa.BigInteger, nullable=False),
    sa.Column("conversation_id", sa.Uuid, nullable=False),
    sa.Column("proposal_id", sa.Uuid, nullable=True),
    sa.Column("tool", sa.Text, nullable=False),
    sa.Column("entity", sa.Text, nullable=False),
    sa.Column("operation", sa.Text, nullable=False),
    sa.Column("record_count", sa.Integer, nullable=False),
    sa.Column("payload_sha256", sa.Text, nullable=False),
    sa.Column("outcome", sa.Text, nullable=False),
    sa.CheckConstraint("event IN ('proposed', 'refused', 'confirmed', 'rejected')",
                       name="ck_assistant_write_audit_event"),
    sa.Index("ix_assistant_write_audit_at", "at"),
)


TABLES = (write_proposals, assistant_write_audit)


def upgrade() -> None:
    bind = op.get_bind()
    for table in TABLES:
        table.create(bind)


def downgrade() -> None:
    bind = op.get_bind()
    for table in reversed(TABLES):
        table.drop(bind)

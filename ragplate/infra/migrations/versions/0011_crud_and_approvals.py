"""CRUD over application entities: the tickets of ``sao.tickets`` (a moderated entity)
and the pending modifications that approvers approve or disapprove.

Revision ID: 0011
Revises: 0010
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

# The tables are written out here, not imported from ragplate.catalog.schema, so this
# revision never changes after release; tests/infra/test_migrations.py checks that the
# migrated database and the catalog's schema stay the same.
metadata = sa.MetaData()

# Only what the foreign keys reference of ``users`` (migration 0009); it is not created here.
sa.Table("users", metadata, sa.Column("id", sa.BigInteger, primary_key=True))

#: Tickets of the moderated CRUD entity ``sao.tickets``: a ``private``
#: ticket is seen by its reporter and the approvers only.
sao_tickets = sa.Table(
    "sao_tickets",
    metadata,
    sa.Column("id", sa.BigInteger, sa.Identity(), primary_key=True),
    sa.Column("tenant", sa.Text, nullable=False, server_default="global"),
    sa.Column("title", sa.Text, nullable=False),
    sa.Column("body", sa.Text, nullable=False),
    sa.Column("status", sa.Text, nullable=False, server_default="open"),
    sa.Column("visibility", sa.Text, nullable=False, server_default="tenant"),
    sa.Column("reporter_id", sa.BigInteger, sa.ForeignKey("users.id", ondelete="SET NULL"),
              nullable=True),
    sa.Column(
        "created_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.func.now()
    ),
    sa.Column(
        "updated_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.func.now()
    ),
    sa.CheckConstraint("status IN ('open', 'closed')", name="ck_sao_tickets_status"),
    sa.CheckConstraint("visibility IN ('tenant', 'private')", name="ck_sao_tickets_visibility"),
    sa.Index("ix_sao_tickets_tenant", "tenant", "id"),
)

#: Writes to a moderated entity waiting for an approver: the exact payload
#: and its SHA-256; ``record_key`` is NULL for a create.
pending_modifications = sa.Table(
    "pending_modifications",
    metadata,
    sa.Column("id", sa.Uuid, primary_key=True, server_default=sa.text("gen_random_uuid()")),
    sa.Column("entity", sa.Text, nullable=False),
    sa.Column("record_key", sa.Text, nullable=True),
    sa.Column("operation", sa.Text, nullable=False),
    sa.Column("payload", JSONB, nullable=False, server_default=sa.text("'{}'::jsonb")),
    sa.Column("payload_sha256", sa.Text, nullable=False),
    sa.Column("requested_by", sa.BigInteger, sa.ForeignKey("users.id", ondelete="CASCADE"),
              nullable=False),
    sa.Column("tenant", sa.Text, nullable=False),
    sa.Column("status", sa.Text, nullable=False, server_default="pending"),
    sa.Column("decided_by", sa.BigInteger, nullable=True),
    sa.Column("decided_at", sa.DateTime(timezone=True), nullable=True),
    # The clock, not the transaction's start: the order of requests is the order of rows.
    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False,
              server_default=sa.text("clock_timestamp()")),
    sa.CheckConstraint("operation IN ('create', 'update', 'delete')",
                       name="ck_pending_modifications_operation"),
    sa.CheckConstraint("status IN ('pending', 'approved', 'disapproved')",
                       name="ck_pending_modifications_status"),
    sa.Index("ix_pending_modifications_entity_status", "entity", "status"),
)


TABLES = (sao_tickets, pending_modifications)


def upgrade() -> None:
    bind = op.get_bind()
    for table in TABLES:
        table.create(bind)


def downgrade() -> None:
    bind = op.get_bind()
    for table in reversed(TABLES):
        table.drop(bind)

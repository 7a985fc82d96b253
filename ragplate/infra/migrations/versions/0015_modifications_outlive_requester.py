"""A modification outlives the person who requested it: ``pending_modifications.requested_by``
becomes NULL when that person is deleted, instead of taking the row with it.

Deleting a person used to delete every modification they had requested, decided ones
included: the approvals' trail of who approved what, and a pending one an approver was
about to decide, went with the account (the records written by them stay).

Revision ID: 0015
Revises: 0014
"""

from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None

#: PostgreSQL's own name for the constraint migration 0011 created unnamed.
CONSTRAINT = "pending_modifications_requested_by_fkey"


def upgrade() -> None:
    op.drop_constraint(CONSTRAINT, "pending_modifications", type_="foreignkey")
    op.alter_column("pending_modifications", "requested_by", nullable=True)
    op.create_foreign_key(CONSTRAINT, "pending_modifications", "users", ["requested_by"],
                          ["id"], ondelete="SET NULL")


def downgrade() -> None:
    # A modification whose requester is gone cannot be kept under a NOT NULL column.
    op.execute("DELETE FROM pending_modifications WHERE requested_by IS NULL")
    op.drop_constraint(CONSTRAINT, "pending_modifications", type_="foreignkey")
    op.alter_column("pending_modifications", "requested_by", nullable=False)
    op.create_foreign_key(CONSTRAINT, "pending_modifications", "users", ["requested_by"],
                          ["id"], ondelete="CASCADE")

"""A message may be a clarification: the assistant asking which of several things the
person means, instead of answering or abstaining.

Revision ID: 0010
Revises: 0009
"""

from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

BEFORE = "status IS NULL OR status IN ('answered', 'abstained', 'refused')"
AFTER = "status IS NULL OR status IN ('answered', 'abstained', 'refused', 'clarification')"


def upgrade() -> None:
    op.drop_constraint("ck_messages_status", "messages", type_="check")
    op.create_check_constraint("ck_messages_status", "messages", AFTER)


def downgrade() -> None:
    # A clarification has no older status to become: downgrading drops them.
    op.execute("DELETE FROM messages WHERE status = 'clarification'")
    op.drop_constraint("ck_messages_status", "messages", type_="check")
    op.create_check_constraint("ck_messages_status", "messages", BEFORE)

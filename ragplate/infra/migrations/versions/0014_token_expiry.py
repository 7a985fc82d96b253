"""API tokens expire: ``api_tokens.expires_at``, required.

A token issued before this revision gets the expiry it would have had under the new
defaults, counted from when it was issued: 90 days (the default of
``RAGPLATE_TOKEN_TTL_DAYS``) for a person's own token, 8 hours for one acting as someone
(``impersonated_by``). So an old token expires at once rather than living on, and every
row has an expiry before the column becomes NOT NULL: none is left without one.

Revision ID: 0014
Revises: 0013
"""

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None

#: Frozen here (not imported): a revision must do the same thing whenever it runs.
DEFAULT_TTL = "90 days"
IMPERSONATION_TTL = "8 hours"


def upgrade() -> None:
    op.add_column("api_tokens", sa.Column("expires_at", sa.DateTime(timezone=True),
                                          nullable=True))
    op.execute(
        "UPDATE api_tokens SET expires_at = created_at + CASE WHEN impersonated_by IS NULL "
        f"THEN interval '{DEFAULT_TTL}' ELSE interval '{IMPERSONATION_TTL}' END")
    op.alter_column("api_tokens", "expires_at", nullable=False)


def downgrade() -> None:
    op.drop_column("api_tokens", "expires_at")

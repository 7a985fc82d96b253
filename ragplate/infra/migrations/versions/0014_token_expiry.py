"""API tokens expire: ``api_tokens.expires_at``, required.

A token issued before this revision gets the expiry it would have had under the new
defaults, counted from when it was issued: 90 days (the default of
``RAGPLATE_TOKEN_TTL_DAYS``) for a person's own token, 8 hours for one acting as someone
(``impersonated_by``). A person's own token that this would expire at once (or within
the grace period) lives 14 days from the upgrade instead: an integration's standing token
does not turn into a 401 the moment a new release first touches the database, and its
operator has two weeks to issue a new one (``ragplate users list`` shows each person's
nearest expiry). A session acting as someone gets no grace. Every row has an expiry
before the column becomes NOT NULL: none is left without one.

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
GRACE = "14 days"


def upgrade() -> None:
    op.add_column("api_tokens", sa.Column("expires_at", sa.DateTime(timezone=True),
                                          nullable=True))
    op.execute(
        "UPDATE api_tokens SET expires_at = CASE WHEN impersonated_by IS NULL "
        f"THEN GREATEST(created_at + interval '{DEFAULT_TTL}', now() + interval '{GRACE}') "
        f"ELSE created_at + interval '{IMPERSONATION_TTL}' END")
    op.alter_column("api_tokens", "expires_at", nullable=False)


def downgrade() -> None:
    op.drop_column("api_tokens", "expires_at")

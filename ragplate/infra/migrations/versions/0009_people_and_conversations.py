"""People, API tokens, conversations and messages: who uses the assistant and the API,
and what they said to it.

Only the SHA-256 of an API token is stored. Conversations and messages belong to one
person and go with them when they are deleted.

Revision ID: 0009
Revises: 0008
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import ARRAY, JSONB

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

# The tables are written out here, not imported from ragplate.catalog.schema, so this
# revision never changes after release; tests/infra/test_migrations.py checks that the
# migrated database and the catalog's schema stay the same.
metadata = sa.MetaData()

#: People who use the assistant and the API (migration 0009). ``permissions`` are names such
#: as ``docs.developer``; a guest never reaches the assistant.
users = sa.Table(
    "users",
    metadata,
    sa.Column("id", sa.BigInteger, sa.Identity(), primary_key=True),
    sa.Column("name", sa.Text, nullable=False),
    sa.Column("tenant", sa.Text, nullable=True),
    sa.Column("locale", sa.Text, nullable=False, server_default="en"),
    sa.Column("permissions", ARRAY(sa.Text), nullable=False,
              server_default=sa.text("'{}'::text[]")),
    sa.Column("is_guest", sa.Boolean, nullable=False, server_default=sa.false()),
    sa.Column(
        "created_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.func.now()
    ),
    sa.UniqueConstraint("name", name="uq_users_name"),
)

#: API tokens: only the SHA-256 of a token is stored (a token is 256 random bits, so a
#: fast hash is enough: there is nothing to guess); ``hint`` is its first characters, to
#: tell tokens apart in a listing.
api_tokens = sa.Table(
    "api_tokens",
    metadata,
    sa.Column("id", sa.BigInteger, sa.Identity(), primary_key=True),
    sa.Column("user_id", sa.BigInteger, sa.ForeignKey("users.id", ondelete="CASCADE"),
              nullable=False),
    sa.Column("token_hash", sa.Text, nullable=False),
    sa.Column("hint", sa.Text, nullable=False),
    sa.Column(
        "created_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.func.now()
    ),
    sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=True),
    sa.UniqueConstraint("token_hash", name="uq_api_tokens_hash"),
    sa.Index("ix_api_tokens_user", "user_id"),
)

#: A person's conversations with the assistant.
conversations = sa.Table(
    "conversations",
    metadata,
    sa.Column("id", sa.Uuid, primary_key=True, server_default=sa.text("gen_random_uuid()")),
    sa.Column("user_id", sa.BigInteger, sa.ForeignKey("users.id", ondelete="CASCADE"),
              nullable=False),
    sa.Column("title", sa.Text, nullable=True),
    sa.Column(
        "created_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.func.now()
    ),
    sa.Index("ix_conversations_user", "user_id", "created_at"),
)

#: The messages of a conversation: the person's (``user``) and the assistant's, with the
#: status (answered, abstained, refused), refusal category, citations and metadata.
messages = sa.Table(
    "messages",
    metadata,
    sa.Column("id", sa.Uuid, primary_key=True, server_default=sa.text("gen_random_uuid()")),
    sa.Column("conversation_id", sa.Uuid,
              sa.ForeignKey("conversations.id", ondelete="CASCADE"), nullable=False),
    sa.Column("role", sa.Text, nullable=False),
    sa.Column("text", sa.Text, nullable=False),
    sa.Column("status", sa.Text, nullable=True),
    sa.Column("refusal_category", sa.Text, nullable=True),
    sa.Column("citations", JSONB, nullable=False, server_default=sa.text("'[]'::jsonb")),
    sa.Column("metadata", JSONB, nullable=False, server_default=sa.text("'{}'::jsonb")),
    # The clock, not the transaction's start: two turns stored in one transaction keep
    # their order.
    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False,
              server_default=sa.text("clock_timestamp()")),
    sa.CheckConstraint("role IN ('user', 'assistant')", name="ck_messages_role"),
    sa.CheckConstraint("status IS NULL OR status IN ('answered', 'abstained', 'refused')",
                       name="ck_messages_status"),
    sa.Index("ix_messages_conversation", "conversation_id", "created_at"),
)


TABLES = (users, api_tokens, conversations, messages)


def upgrade() -> None:
    bind = op.get_bind()
    for table in TABLES:
        table.create(bind)


def downgrade() -> None:
    bind = op.get_bind()
    for table in reversed(TABLES):
        table.drop(bind)

"""The SQL schema (SQLAlchemy 2 Core tables). Alembic migrations create it."""

from __future__ import annotations

import sqlalchemy as sa
from pgvector.sqlalchemy import Vector
from sqlalchemy.dialects.postgresql import ARRAY, JSONB, TSVECTOR

from ragplate.catalog.text_search import configuration_sql

metadata = sa.MetaData()

#: Typed application settings stored in PostgreSQL (the active embedding profile, ...).
settings_table = sa.Table(
    "settings",
    metadata,
    sa.Column("key", sa.Text, primary_key=True),
    sa.Column("value", JSONB, nullable=False),
    sa.Column("managed", sa.Boolean, nullable=False, server_default=sa.false()),
    sa.Column(
        "updated_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.func.now()
    ),
)

#: One row per indexed documentation source, per index and embedding model.
rag_sources = sa.Table(
    "rag_sources",
    metadata,
    sa.Column("index_name", sa.Text, primary_key=True),
    sa.Column("model_key", sa.Text, primary_key=True),
    sa.Column("source", sa.Text, primary_key=True),
    sa.Column("content_hash", sa.Text, nullable=False),
    sa.Column("chunk_count", sa.Integer, nullable=False),
    sa.Column(
        "indexed_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.func.now()
    ),
    # How the source's vectors were made (migration 0005); '' when not recorded.
    sa.Column("vector_recipe", sa.Text, nullable=False, server_default=""),
    # The prefix of the root the source was read from (migration 0006); NULL: not recorded.
    sa.Column("root_prefix", sa.Text, nullable=True),
)

#: Characters of a chunk's text its keyword-search vector reads (migration 0007): a
#: tsvector holds at most 1 MB, which an inline base64 image of a few hundred KB exceeds.
DOCS_SEARCH_TEXT_CHARS = 100_000

#: Generated keyword-search vector of a documentation chunk (migrations 0004, 0007, 0008): the
#: words of its source label and heading breadcrumb weigh A, the first
#: :data:`DOCS_SEARCH_TEXT_CHARS` characters of its text D, both read in the language of the
#: chunk's locale (:mod:`ragplate.catalog.text_search`).
_DOCS_CONFIG = configuration_sql("metadata->>'locale'")
DOCS_SEARCH_VECTOR = (
    f"setweight(to_tsvector({_DOCS_CONFIG}, translate(source, '/_.-', '    ') || ' ' "
    f"|| coalesce(metadata->>'heading_breadcrumb', '')), 'A') "
    f"|| setweight(to_tsvector({_DOCS_CONFIG}, left(text, {DOCS_SEARCH_TEXT_CHARS})), 'D')"
)

#: Documentation chunks. ``embedding`` has no fixed length so several models can live side
#: by side; each (index, model) gets its own partial HNSW index on a typed cast.
rag_chunks = sa.Table(
    "rag_chunks",
    metadata,
    sa.Column("id", sa.BigInteger, sa.Identity(), primary_key=True),
    sa.Column("index_name", sa.Text, nullable=False),
    sa.Column("model_key", sa.Text, nullable=False),
    sa.Column("source", sa.Text, nullable=False),
    sa.Column("ordinal", sa.Integer, nullable=False),
    sa.Column("text", sa.Text, nullable=False),
    sa.Column("metadata", JSONB, nullable=False),
    sa.Column("embedding", Vector(), nullable=False),
    sa.Column("search", TSVECTOR, sa.Computed(DOCS_SEARCH_VECTOR, persisted=True)),
    # The terms the chunk is counted under (``stores.word_counts.counted_terms``); NULL only
    # for a row a writer of an earlier release stored (counted as holding none).
    sa.Column("terms", ARRAY(sa.Text), nullable=True),
    sa.Index("ix_rag_chunks_source", "index_name", "model_key", "source"),
    sa.Index("ix_rag_chunks_search", "search", postgresql_using="gin"),
)

#: Per (index, model) and term, how many chunks hold it in their ``terms`` (``""``: every
#: chunk; see ``stores.word_counts``): kept by statement triggers on ``rag_chunks`` on every
#: insert, delete, update and truncate (migration 0016), each writer of an index counting
#: after the one before; the assistant's coverage check weighs words by it.
rag_term_counts = sa.Table(
    "rag_term_counts",
    metadata,
    sa.Column("index_name", sa.Text, primary_key=True),
    sa.Column("model_key", sa.Text, primary_key=True),
    sa.Column("term", sa.Text, primary_key=True),
    sa.Column("chunks", sa.Integer, nullable=False),
)

#: Generated keyword-search vector of a content translation (migrations 0002, 0008): the
#: title weighs most, both read in the language of the translation's locale.
_CONTENT_CONFIG = configuration_sql("locale")
CONTENT_SEARCH_VECTOR = (f"setweight(to_tsvector({_CONTENT_CONFIG}, title), 'A') "
                         f"|| to_tsvector({_CONTENT_CONFIG}, body)")

#: The records of the shipped entity ``cms.contents`` (texts are in the translations).
cms_contents = sa.Table(
    "cms_contents",
    metadata,
    sa.Column("id", sa.BigInteger, sa.Identity(), primary_key=True),
    sa.Column("tenant", sa.Text, nullable=False, server_default="global"),
    sa.Column("status", sa.Text, nullable=False),
    sa.Column(
        "created_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.func.now()
    ),
    sa.Column(
        "updated_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.func.now()
    ),
    sa.CheckConstraint(
        "status IN ('draft', 'published', 'archived')", name="ck_cms_contents_status"
    ),
)

#: One row per content and locale.
cms_content_translations = sa.Table(
    "cms_content_translations",
    metadata,
    sa.Column(
        "content_id",
        sa.BigInteger,
        sa.ForeignKey("cms_contents.id", ondelete="CASCADE"),
        primary_key=True,
    ),
    sa.Column("locale", sa.Text, primary_key=True),
    sa.Column("title", sa.Text, nullable=False),
    sa.Column("body", sa.Text, nullable=False),
    sa.Column("search", TSVECTOR, sa.Computed(CONTENT_SEARCH_VECTOR, persisted=True)),
    sa.Index("ix_cms_content_translations_search", "search", postgresql_using="gin"),
)

#: Vectors of embeddable records, one per (entity, record, locale, model). ``embedding``
#: has no fixed length: each model key gets its own partial HNSW index on a typed cast
#: (see ``ragplate.infra.records.vectors``), created on demand.
model_embeddings = sa.Table(
    "model_embeddings",
    metadata,
    sa.Column("id", sa.BigInteger, sa.Identity(), primary_key=True),
    sa.Column("entity", sa.Text, nullable=False),
    sa.Column("record_key", sa.Text, nullable=False),
    sa.Column("locale", sa.Text, nullable=False),
    sa.Column("model_key", sa.Text, nullable=False),
    sa.Column("text_hash", sa.Text, nullable=False),
    sa.Column("embedding", Vector(), nullable=False),
    sa.Column(
        "created_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.func.now()
    ),
    sa.UniqueConstraint(
        "entity", "record_key", "locale", "model_key", name="uq_model_embeddings_text"
    ),
    # "Does this model have vectors?" and the prune of other models, without walking
    # every record of the unique index.
    sa.Index("ix_model_embeddings_model", "model_key", "entity"),
)

#: The embedding-model switch state: a single row (id 1). ``status`` (idle, running,
#: failed) and ``target`` are read by writers of records (a running or failed switch makes
#: them embed with the target too); the full state is ``data`` (see
#: ``ragplate.catalog.switch.SwitchState``). Written only under the state advisory lock.
embedding_switch = sa.Table(
    "embedding_switch",
    metadata,
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
    # A token an operator was issued to act as this person (migration 0013): their
    # questions are never logged in the query analytics.
    sa.Column("impersonated_by", sa.BigInteger,
              sa.ForeignKey("users.id", ondelete="CASCADE"), nullable=True),
    # When the token stops working (migration 0014), set by the database's clock when it is
    # issued. No default: a row written without an expiry is refused, never immortal.
    sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
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
#: status (answered, abstained, refused, clarification), refusal category, citations and
#: metadata.
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
    sa.CheckConstraint("status IS NULL OR status IN ('answered', 'abstained', 'refused', "
                       "'clarification')",
                       name="ck_messages_status"),
    sa.Index("ix_messages_conversation", "conversation_id", "created_at"),
)

#: Tickets of the moderated CRUD entity ``sao.tickets`` (migration 0011): a ``private``
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

#: Writes to a moderated entity waiting for an approver (migration 0011): the exact payload
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
    # NULL once the person who requested it is deleted (migration 0015): the trail stays.
    sa.Column("requested_by", sa.BigInteger, sa.ForeignKey("users.id", ondelete="SET NULL"),
              nullable=True),
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

#: Documentation query analytics (migration 0013): one row per answered or abstained
#: question, exactly the fields of :data:`ragplate.catalog.analytics.FIELDS`; nothing in
#: ragplate reads it to answer. No foreign key: ``user_ref`` is an HMAC, never an id.
rag_queries = sa.Table(
    "rag_queries",
    metadata,
    sa.Column("id", sa.Uuid, primary_key=True),
    sa.Column("logged_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("user_ref", sa.Text, nullable=False),
    sa.Column("tenant", sa.Text, nullable=False),
    sa.Column("profile", sa.Text, nullable=False),
    sa.Column("locale", sa.Text, nullable=False),
    sa.Column("query", sa.Text, nullable=True),
    sa.Column("retrieved_count", sa.Integer, nullable=False),
    sa.Column("citation_count", sa.Integer, nullable=False),
    sa.Column("answered", sa.Boolean, nullable=False),
    sa.Column("latency_ms", sa.Float, nullable=False),
    sa.Column("index", sa.Text, nullable=False),
    sa.Index("ix_rag_queries_logged_at", "logged_at"),
    sa.Index("ix_rag_queries_user_ref", "user_ref"),
)

"""The SQL schema (SQLAlchemy 2 Core tables). Alembic migrations create it."""

from __future__ import annotations

import sqlalchemy as sa
from pgvector.sqlalchemy import Vector
from sqlalchemy.dialects.postgresql import JSONB

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
    sa.Index("ix_rag_chunks_source", "index_name", "model_key", "source"),
)

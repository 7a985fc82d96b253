"""The migrations and the catalog schema describe the same database.

``ragplate.catalog.schema`` is what the code queries; the Alembic revisions are what
creates the database. A column added to one and not the other would pass every store test
on a fresh database of one kind and fail on the other, so the migrated test database is
compared with the schema, server defaults included; and a database at an older revision,
holding rows, is upgraded by its first use."""

from __future__ import annotations

import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from ragplate.catalog.schema import metadata
from ragplate.infra.records import vectors
from ragplate.infra.stores import pgvector

# Alembic's own bookkeeping table is not part of the schema.
VERSION_TABLE = "ragplate_alembic_version"
# The drivers create a vector index per (index, model) or model on demand: not migrations.
ON_DEMAND_INDEXES = (pgvector.hnsw_index_name("x", "y")[:-12],
                     vectors.INDEX_PREFIX)


def _ours(name: str | None, type_: str, parent_names: Any) -> bool:
    if type_ == "table":
        return name != VERSION_TABLE
    return not (type_ == "index" and (name or "").startswith(ON_DEMAND_INDEXES))


def test_the_migrated_database_matches_the_schema(engine: sa.Engine) -> None:
    with engine.connect() as conn:
        context = MigrationContext.configure(
            conn, opts={"include_name": _ours, "compare_server_default": True}
        )
        differences = compare_metadata(context, metadata)

    assert differences == []


def test_the_recipe_column_has_a_default_for_sources_stored_before_it(
    engine: sa.Engine,
) -> None:
    columns = {c["name"]: c for c in sa.inspect(engine).get_columns("rag_sources")}

    assert columns["vector_recipe"]["nullable"] is False
    assert columns["vector_recipe"]["default"] == "''::text"


def test_the_head_read_from_the_revision_files_is_alembics() -> None:
    from alembic.config import Config
    from alembic.script import ScriptDirectory

    from ragplate.infra.database import MIGRATIONS_DIR, head_revision

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))

    assert head_revision() == ScriptDirectory.from_config(config).get_current_head()


def test_the_migrated_database_is_at_the_head(engine: sa.Engine) -> None:
    from ragplate.infra.database import current_revision, head_revision

    assert current_revision(engine) == head_revision()


def test_an_existing_database_holding_tokens_gets_their_expiry(ragplate_home: Path,
                                                               engine: sa.Engine) -> None:
    """A database at 0013 (before tokens expired) holding tokens, upgraded as the first use
    of a new release upgrades it: every token gets an expiry counted from when it was
    issued (90 days; 8 hours for one acting as someone), a person's own token that would
    expire within 14 days lives 14 days from the upgrade instead, the column becomes
    required, and an old session acting as someone is refused as expired."""
    import psycopg

    from ragplate.catalog.errors import AuthenticationError
    from ragplate.catalog.settings import Settings
    from ragplate.infra import database, postgres
    from ragplate.infra.people import token_hash
    from ragplate.tasks.people.accounts import authenticate

    server = postgres.start(ragplate_home)
    name = f"ragplate_upgrade_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(server.libpq_url("postgres"), autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    old = sa.create_engine(server.url(name), poolclass=sa.NullPool)
    external = Settings(home=ragplate_home, database_url=server.url(name))
    try:
        database.ensure_pgvector(old)
        database.upgrade(old, "0013")
        ages = {"fresh": "1 day", "stale": "100 days", "acting": "1 hour",
                "acting-stale": "9 hours"}
        with old.begin() as conn:
            ids = {row.name: row.id for row in conn.execute(sa.text(
                "INSERT INTO users (name, permissions) VALUES ('ada', '{}'), "
                "('op', '{tenants.operator}') RETURNING name, id"))}
            for token, age in ages.items():
                conn.execute(sa.text(
                    "INSERT INTO api_tokens (user_id, token_hash, hint, created_at, "
                    "impersonated_by) VALUES (:user, :hash, 'rp_xxxxx', now() - "
                    "CAST(:age AS interval), :acting)"),
                    {"user": ids["ada"], "hash": token_hash(f"rp_{token}"), "age": age,
                     "acting": ids["op"] if token.startswith("acting") else None})
        assert "expires_at" not in {c["name"] for c in sa.inspect(old).get_columns(
            "api_tokens")}

        # The first use of the database by this release migrates it, as every command does.
        upgraded = database.get_engine(external)
        assert upgraded is not engine
        assert database.current_revision(old) == database.head_revision()
        column = next(c for c in sa.inspect(old).get_columns("api_tokens")
                      if c["name"] == "expires_at")
        assert column["nullable"] is False
        with old.connect() as conn:
            found = {row.token_hash: (row.lifetime, row.left) for row in conn.execute(sa.text(
                "SELECT token_hash, expires_at - created_at AS lifetime, "
                "expires_at - now() AS left FROM api_tokens"))}
        lifetimes = {key: lifetime for key, (lifetime, _) in found.items()}
        assert lifetimes[token_hash("rp_fresh")] == timedelta(days=90)
        assert lifetimes[token_hash("rp_acting")] == timedelta(hours=8)
        assert lifetimes[token_hash("rp_acting-stale")] == timedelta(hours=8)
        # 100 days old: past its 90, it is given the 14 days of grace from the upgrade.
        grace = found[token_hash("rp_stale")][1]
        assert timedelta(days=13, hours=23) < grace <= timedelta(days=14)
        for token in ("fresh", "stale", "acting"):
            assert authenticate(upgraded, f"Bearer rp_{token}").name == "ada"
        with pytest.raises(AuthenticationError, match=r"^token expired"):
            authenticate(upgraded, "Bearer rp_acting-stale")
    finally:
        old.dispose()
        database.dispose(database.database_url(external))
        with psycopg.connect(server.libpq_url("postgres"), autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

"""The migrations and the catalog schema describe the same database.

``ragplate.catalog.schema`` is what the code queries; the Alembic revisions are what
creates the database. A column added to one and not the other would pass every store test
on a fresh database of one kind and fail on the other, so the migrated test database is
compared with the schema, server defaults included."""

from __future__ import annotations

from typing import Any

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

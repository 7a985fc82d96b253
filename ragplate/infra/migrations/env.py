"""Alembic environment: runs on the connection ragplate hands over."""

from alembic import context

from ragplate.catalog.schema import metadata

config = context.config
connection = config.attributes.get("connection")
if connection is None:
    raise RuntimeError("ragplate migrations run through `ragplate db upgrade`")
# Prefect keeps its own alembic_version; ours has its own name so they can share a server.
context.configure(
    connection=connection, target_metadata=metadata, version_table="ragplate_alembic_version"
)
with context.begin_transaction():
    context.run_migrations()

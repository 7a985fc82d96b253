"""Typed application settings kept in PostgreSQL (shared by every ragplate process)."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.engine import Connection, Engine

from ragplate.catalog.profiles import PROFILES
from ragplate.catalog.schema import settings_table
from ragplate.catalog.settings import DEFAULT_PROFILE

ACTIVE_PROFILE = "embeddings.model"


def read(conn: Connection, key: str) -> Any | None:
    """The stored value of ``key`` or ``None``."""
    row = conn.execute(
        sa.select(settings_table.c.value).where(settings_table.c.key == key)
    ).first()
    return None if row is None else row[0]


def write_managed(conn: Connection, key: str, value: Any) -> None:
    """Write a managed setting: only code writes these, never a settings form."""
    statement = insert(settings_table).values(key=key, value=value, managed=True)
    conn.execute(
        statement.on_conflict_do_update(
            index_elements=[settings_table.c.key],
            set_={"value": statement.excluded.value, "updated_at": sa.func.now()},
        )
    )


def active_profile_key(engine: Engine) -> str:
    """The profile that serves search; seeded with the default on first use."""
    with engine.begin() as conn:
        value = read(conn, ACTIVE_PROFILE)
        if value is None:
            # ON CONFLICT keeps a value another process seeded a moment earlier.
            conn.execute(
                insert(settings_table)
                .values(key=ACTIVE_PROFILE, value=DEFAULT_PROFILE, managed=True)
                .on_conflict_do_nothing()
            )
            value = read(conn, ACTIVE_PROFILE)
    return str(value)


def set_active_profile(conn: Connection, key: str) -> None:
    """Make ``key`` the serving profile (inside the caller's transaction)."""
    if key not in PROFILES:
        raise ValueError(f"unknown embedding profile '{key}'")
    write_managed(conn, ACTIVE_PROFILE, key)

"""The SQL of ``cms.contents`` records (``cms_contents`` and ``cms_content_translations``,
migration 0002): create, update, delete, and the bulk loads of demo data and fixtures.
Every function runs in the caller's transaction; the vectors are :mod:`.vectors`'."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import sqlalchemy as sa
from sqlalchemy.engine import Connection

#: One translation row: (content key, locale, title, body).
TranslationRow = tuple[int, str, str, str]


def content_exists(conn: Connection, key: int) -> bool:
    """Whether the content ``key`` exists."""
    sql = sa.text("SELECT EXISTS (SELECT 1 FROM cms_contents WHERE id = :k)")
    return bool(conn.execute(sql, {"k": key}).scalar_one())


def insert_content(conn: Connection, *, tenant: str, status: str) -> int:
    """A new content; returns its key."""
    sql = sa.text("INSERT INTO cms_contents (tenant, status) VALUES (:t, :s) RETURNING id")
    return int(conn.execute(sql, {"t": tenant, "s": status}).scalar_one())


def update_content(conn: Connection, key: int, *, tenant: str, status: str) -> int | None:
    """Set the tenant and status of the content ``key``; ``None`` when it does not exist."""
    sql = sa.text("UPDATE cms_contents SET tenant = :t, status = :s, updated_at = now() "
                  "WHERE id = :k RETURNING id")
    saved = conn.execute(sql, {"t": tenant, "s": status, "k": key}).scalar()
    return None if saved is None else int(saved)


def replace_translations(conn: Connection, key: int,
                         translations: Mapping[str, tuple[str, str]]) -> None:
    """Make ``translations`` (locale -> (title, body)) the content's only translations."""
    conn.execute(
        sa.text("DELETE FROM cms_content_translations WHERE content_id = :k "
                "AND NOT (locale = ANY(CAST(:locales AS text[])))"),
        {"k": key, "locales": list(translations)},
    )
    conn.execute(
        sa.text("INSERT INTO cms_content_translations (content_id, locale, title, body) "
                "VALUES (:k, :l, :t, :b) ON CONFLICT (content_id, locale) DO UPDATE "
                "SET title = excluded.title, body = excluded.body"),
        [{"k": key, "l": loc, "t": t, "b": b} for loc, (t, b) in translations.items()],
    )


def delete_content(conn: Connection, key: int) -> bool:
    """Delete the content ``key`` (its translations go with it); False when it did not
    exist."""
    sql = sa.text("DELETE FROM cms_contents WHERE id = :k RETURNING id")
    return conn.execute(sql, {"k": key}).scalar() is not None


def delete_all_contents(conn: Connection) -> int:
    """Delete every content; returns how many there were."""
    return int(conn.execute(sa.text("DELETE FROM cms_contents")).rowcount)


def insert_contents(conn: Connection, count: int, *, tenant: str, status: str) -> list[int]:
    """``count`` new contents of one tenant and status; returns their keys, ascending."""
    keys = sorted(int(k) for k in conn.execute(sa.text(
        "SELECT nextval(pg_get_serial_sequence('cms_contents', 'id')) "
        "FROM generate_series(1, :n)"), {"n": count}).scalars())
    conn.execute(sa.text(
        "INSERT INTO cms_contents (id, tenant, status) SELECT id, :t, :s "
        "FROM unnest(CAST(:ids AS bigint[])) AS id"), {"t": tenant, "s": status, "ids": keys})
    return keys


def insert_keyed_contents(conn: Connection, rows: Sequence[tuple[int, str, str]]) -> None:
    """Contents with given keys ``(key, tenant, status)``; the key sequence is moved past
    them so that later inserts get new keys."""
    conn.execute(sa.text("INSERT INTO cms_contents (id, tenant, status) VALUES "
                         "(:id, :tenant, :status)"),
                 [{"id": key, "tenant": tenant, "status": status}
                  for key, tenant, status in rows])
    conn.execute(sa.text("SELECT setval(pg_get_serial_sequence('cms_contents', 'id'), "
                         "(SELECT max(id) FROM cms_contents))"))


def insert_translations(conn: Connection, rows: Sequence[TranslationRow]) -> None:
    """New translation rows ``(key, locale, title, body)``."""
    conn.execute(sa.text(
        "INSERT INTO cms_content_translations (content_id, locale, title, body) "
        "VALUES (:k, :l, :t, :b)"),
        [{"k": k, "l": loc, "t": t, "b": b} for k, loc, t, b in rows])


def analyze_contents(conn: Connection) -> None:
    """Fresh planner statistics of the contents, their translations and the vectors."""
    conn.execute(sa.text("ANALYZE cms_contents, cms_content_translations, model_embeddings"))

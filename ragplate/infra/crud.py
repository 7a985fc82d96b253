"""The SQL of the CRUD service (``ragplate.tasks.crud``): records of ``cms.contents``
(``cms_contents`` with one translation per locale) and ``sao.tickets`` (``sao_tickets``),
and the pending modifications of moderated entities.

Nothing is decided here: which rows a reader sees arrives as a
:class:`~ragplate.catalog.crud.RowScope`. Every function runs in the caller's transaction;
``lock=True`` reads take the row lock (``FOR UPDATE``) a write holds until it commits.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ragplate.catalog.crud import RowScope

#: The record table of each entity (names are constants: nothing here comes from input).
TABLES = {"cms.contents": "cms_contents", "sao.tickets": "sao_tickets"}


def _scope(scope: RowScope, params: dict[str, Any]) -> str:
    where = ["r.tenant = ANY(CAST(:tenants AS text[]))"]
    params["tenants"] = list(scope.tenants)
    if scope.statuses is not None:
        where.append("r.status = ANY(CAST(:statuses AS text[]))")
        params["statuses"] = list(scope.statuses)
    if scope.open_visibilities is not None:
        where.append("(r.visibility = ANY(CAST(:open AS text[])) OR r.reporter_id = :reporter)")
        params["open"] = list(scope.open_visibilities)
        params["reporter"] = scope.reporter_id
    return " AND ".join(where)


def _content(row: Any, translations: Mapping[str, dict[str, str]]) -> dict[str, Any]:
    return {"id": int(row.id), "tenant": row.tenant, "status": row.status,
            "translations": dict(translations),
            "created_at": row.created_at.isoformat(), "updated_at": row.updated_at.isoformat()}


def _ticket(row: Any) -> dict[str, Any]:
    return {"id": int(row.id), "tenant": row.tenant, "title": row.title, "body": row.body,
            "status": row.status, "visibility": row.visibility,
            "reporter_id": None if row.reporter_id is None else int(row.reporter_id),
            "created_at": row.created_at.isoformat(), "updated_at": row.updated_at.isoformat()}


def _translations(conn: Connection, keys: list[int], locale: str | None
                  ) -> dict[int, dict[str, dict[str, str]]]:
    sql = ("SELECT content_id, locale, title, body FROM cms_content_translations "
           "WHERE content_id = ANY(CAST(:keys AS bigint[]))")
    params: dict[str, Any] = {"keys": keys}
    if locale is not None:
        sql += " AND locale = :locale"
        params["locale"] = locale
    found: dict[int, dict[str, dict[str, str]]] = {k: {} for k in keys}
    for row in conn.execute(sa.text(sql + " ORDER BY content_id, locale"), params):
        found[int(row.content_id)][row.locale] = {"title": row.title, "body": row.body}
    return found


def read_record(conn: Connection, entity: str, key: int, scope: RowScope, *,
                lock: bool = False) -> dict[str, Any] | None:
    """The record ``key`` of ``entity`` if ``scope`` lets it be seen, else ``None``."""
    params: dict[str, Any] = {"key": key}
    where = _scope(scope, params)
    sql = f"SELECT r.* FROM {TABLES[entity]} r WHERE r.id = :key AND {where}"
    row = conn.execute(sa.text(sql + (" FOR UPDATE" if lock else "")), params).one_or_none()
    if row is None:
        return None
    if entity == "sao.tickets":
        return _ticket(row)
    return _content(row, _translations(conn, [key], None)[key])


def list_records(conn: Connection, entity: str, scope: RowScope, *, limit: int, offset: int,
                 locale: str | None = None) -> tuple[list[dict[str, Any]], int]:
    """A page of the records ``scope`` lets be seen, by key, and how many there are in all;
    a content's translations are cut to ``locale`` when given."""
    params: dict[str, Any] = {"limit": limit, "offset": offset}
    where = _scope(scope, params)
    table = TABLES[entity]
    rows = conn.execute(sa.text(f"SELECT r.* FROM {table} r WHERE {where} ORDER BY r.id "
                                "LIMIT :limit OFFSET :offset"), params).all()
    total = int(conn.execute(sa.text(f"SELECT count(*) FROM {table} r WHERE {where}"),
                             params).scalar_one())
    if entity == "sao.tickets":
        return [_ticket(r) for r in rows], total
    texts = _translations(conn, [int(r.id) for r in rows], locale)
    return [_content(r, texts[int(r.id)]) for r in rows], total


#: The columns a bulk write may select records by (constants: never a name from input).
MATCH_COLUMNS = {"cms.contents": ("status",), "sao.tickets": ("status", "visibility")}


def matching_keys(conn: Connection, entity: str, scope: RowScope, *, tenant: str,
                  where: Mapping[str, str], keys: list[int] | None, limit: int) -> list[int]:
    """The keys of the records of ``entity`` that ``scope`` lets be seen, of ``tenant``,
    whose columns equal ``where`` (and among ``keys`` when given): by key, at most
    ``limit``."""
    params: dict[str, Any] = {"tenant": tenant, "limit": limit}
    clauses = [_scope(scope, params), "r.tenant = :tenant"]
    for number, (name, value) in enumerate(sorted(where.items())):
        if name not in MATCH_COLUMNS[entity]:
            raise ValueError(f"{entity} records are not selected by {name}")
        clauses.append(f"r.{name} = :match{number}")
        params[f"match{number}"] = value
    if keys is not None:
        clauses.append("r.id = ANY(CAST(:keys AS bigint[]))")
        params["keys"] = keys
    sql = (f"SELECT r.id FROM {TABLES[entity]} r WHERE {' AND '.join(clauses)} "
           "ORDER BY r.id LIMIT :limit")
    return [int(r.id) for r in conn.execute(sa.text(sql), params)]


def insert_content(conn: Connection, *, tenant: str, status: str, locale: str, title: str,
                   body: str) -> int:
    """A new content with its one translation; returns its key."""
    key = int(conn.execute(sa.text("INSERT INTO cms_contents (tenant, status) VALUES (:t, :s) "
                                   "RETURNING id"), {"t": tenant, "s": status}).scalar_one())
    conn.execute(sa.text("INSERT INTO cms_content_translations (content_id, locale, title, "
                         "body) VALUES (:k, :l, :t, :b)"),
                 {"k": key, "l": locale, "t": title, "b": body})
    return key


def update_content(conn: Connection, key: int, *, status: str | None, locale: str | None,
                   title: str | None, body: str | None) -> None:
    """Change the status and/or the translation of ``locale`` (created when missing: then
    both texts are given) of the locked content ``key``."""
    conn.execute(sa.text("UPDATE cms_contents SET status = coalesce(:s, status), "
                         "updated_at = now() WHERE id = :k"), {"s": status, "k": key})
    if locale is None or (title is None and body is None):
        return
    conn.execute(sa.text(
        "INSERT INTO cms_content_translations (content_id, locale, title, body) "
        "VALUES (:k, :l, coalesce(:t, ''), coalesce(:b, '')) "
        "ON CONFLICT (content_id, locale) DO UPDATE SET "
        "title = coalesce(:t, cms_content_translations.title), "
        "body = coalesce(:b, cms_content_translations.body)"),
        {"k": key, "l": locale, "t": title, "b": body})


def translation_exists(conn: Connection, key: int, locale: str) -> bool:
    """Whether the content ``key`` has a translation in ``locale``."""
    sql = sa.text("SELECT EXISTS (SELECT 1 FROM cms_content_translations "
                  "WHERE content_id = :k AND locale = :l)")
    return bool(conn.execute(sql, {"k": key, "l": locale}).scalar_one())


def insert_ticket(conn: Connection, *, tenant: str, reporter_id: int | None,
                  values: Mapping[str, str]) -> int:
    """A new ticket (``values``: title, body, and optionally status, visibility)."""
    sql = sa.text("INSERT INTO sao_tickets (tenant, reporter_id, title, body, status, "
                  "visibility) VALUES (:tenant, :reporter, :title, :body, "
                  "coalesce(:status, 'open'), coalesce(:visibility, 'tenant')) RETURNING id")
    return int(conn.execute(sql, {"tenant": tenant, "reporter": reporter_id,
                                  "title": values["title"], "body": values["body"],
                                  "status": values.get("status"),
                                  "visibility": values.get("visibility")}).scalar_one())


def update_ticket(conn: Connection, key: int, changes: Mapping[str, str]) -> None:
    """Change the given fields (title, body, status, visibility) of the locked ticket."""
    sql = sa.text("UPDATE sao_tickets SET title = coalesce(:title, title), "
                  "body = coalesce(:body, body), status = coalesce(:status, status), "
                  "visibility = coalesce(:visibility, visibility), updated_at = now() "
                  "WHERE id = :k")
    conn.execute(sql, {"k": key, **{f: changes.get(f) for f in
                                    ("title", "body", "status", "visibility")}})


def delete_record(conn: Connection, entity: str, key: int) -> bool:
    """Delete the record (a content's translations go with it); False when it was gone."""
    sql = sa.text(f"DELETE FROM {TABLES[entity]} WHERE id = :k RETURNING id")
    return conn.execute(sql, {"k": key}).scalar() is not None


def _modification(row: Any) -> dict[str, Any]:
    return {"id": str(row.id), "entity": row.entity, "record_key": row.record_key,
            "operation": row.operation, "payload": row.payload,
            "payload_sha256": row.payload_sha256,
            "requested_by": None if row.requested_by is None else int(row.requested_by),
            "tenant": row.tenant, "status": row.status,
            "decided_by": None if row.decided_by is None else int(row.decided_by),
            "decided_at": None if row.decided_at is None else row.decided_at.isoformat(),
            "created_at": row.created_at.isoformat()}


def insert_modification(conn: Connection, *, entity: str, record_key: str | None,
                        operation: str, payload: Mapping[str, Any], payload_sha256: str,
                        requested_by: int, tenant: str) -> uuid.UUID:
    """A pending modification; returns its id."""
    sql = sa.text("INSERT INTO pending_modifications (entity, record_key, operation, payload, "
                  "payload_sha256, requested_by, tenant) VALUES (:e, :k, :o, "
                  "CAST(:p AS jsonb), :h, :u, :t) RETURNING id")
    found = conn.execute(sql, {"e": entity, "k": record_key, "o": operation,
                               "p": json.dumps(dict(payload)), "h": payload_sha256,
                               "u": requested_by, "t": tenant}).scalar_one()
    return found if isinstance(found, uuid.UUID) else uuid.UUID(str(found))


def read_modification(conn: Connection, modification_id: uuid.UUID, *, lock: bool = False
                      ) -> dict[str, Any] | None:
    """The modification ``modification_id``; ``lock`` holds it until the transaction ends,
    so two approvers deciding at once decide one after the other."""
    sql = "SELECT * FROM pending_modifications WHERE id = :id" + (" FOR UPDATE" if lock else "")
    row = conn.execute(sa.text(sql), {"id": modification_id}).one_or_none()
    return None if row is None else _modification(row)


def modification_states(conn: Connection, modification_ids: Sequence[str], *,
                        requested_by: int) -> dict[str, dict[str, Any]]:
    """``{id: {"record_key", "status", "decided_at"}}`` of the modifications
    ``modification_ids`` that exist and that ``requested_by`` requested (ids that are not
    UUIDs are left out)."""
    wanted = []
    for value in modification_ids:
        try:
            wanted.append(str(uuid.UUID(str(value))))
        except ValueError:
            continue
    if not wanted:
        return {}
    sql = ("SELECT id, record_key, status, decided_at FROM pending_modifications "
           "WHERE id = ANY(CAST(:ids AS uuid[])) AND requested_by = :user")
    return {str(r.id): {"record_key": r.record_key, "status": r.status,
                        "decided_at": None if r.decided_at is None else r.decided_at.isoformat()}
            for r in conn.execute(sa.text(sql), {"ids": wanted, "user": requested_by})}


def list_modifications(conn: Connection, *, entities: list[str], tenant: str,
                       exclude_requester: int | None = None, limit: int = 100
                       ) -> list[dict[str, Any]]:
    """Pending modifications of these entities and tenant, oldest first."""
    sql = ("SELECT * FROM pending_modifications WHERE status = 'pending' "
           "AND entity = ANY(CAST(:entities AS text[])) AND tenant = :tenant "
           "AND (CAST(:me AS bigint) IS NULL OR requested_by IS DISTINCT FROM :me) "
           "ORDER BY created_at, id LIMIT :limit")
    rows = conn.execute(sa.text(sql), {"entities": entities, "tenant": tenant,
                                       "me": exclude_requester, "limit": limit})
    return [_modification(r) for r in rows]


def decide_modification(conn: Connection, modification_id: uuid.UUID, *, status: str,
                        decided_by: int) -> None:
    """Mark the locked modification ``approved`` or ``disapproved``."""
    conn.execute(sa.text("UPDATE pending_modifications SET status = :s, decided_by = :u, "
                         "decided_at = clock_timestamp() WHERE id = :id"),
                 {"s": status, "u": decided_by, "id": modification_id})

"""Drafting a write proposal from a data tool's call: the same checks a write would make
(permission, tenant, the row's visibility, the payload), nothing written.

A draft holds the exact payload the confirmation will apply, the records a bulk matched
(so the person confirms what they were shown), a bounded summary built by the server from
that payload and the records, and whether the write would wait for an approver. Anything
the person may not do is refused here already; the confirmation decides it all again.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ragplate.catalog.crud import CrudEntity
from ragplate.catalog.errors import InvalidInputError, NotFoundError
from ragplate.catalog.people import Person
from ragplate.catalog.writes import (
    MAX_BULK_RECORDS,
    MAX_SUMMARY_CHARS,
    WriteOperation,
    base_operation,
    text,
)
from ragplate.infra import crud as crud_sql
from ragplate.tasks.crud import acl
from ragplate.tasks.crud.payloads import payload_sha256, validate
from ragplate.tasks.crud.service import CrudService

#: The longest part of a value a summary quotes.
_QUOTED_CHARS = 60


class BulkTooLargeError(InvalidInputError):
    """A bulk proposal matching more than :data:`MAX_BULK_RECORDS` records."""


@dataclass
class Draft:
    """A proposal before it is stored with its message."""

    tool: str
    entity: str
    operation: WriteOperation
    payload: dict[str, Any]
    summary: str
    requires_approval: bool
    expires_at: datetime
    record_keys: list[int] = field(default_factory=list)
    id: uuid.UUID = field(default_factory=uuid.uuid4)

    def model_summary(self) -> str:
        """What the tool tells the model: the operation, entity, ids and field names — no
        text of the records (a record withheld from the model stays withheld)."""
        keys = self.record_keys
        shown = (", ".join(str(k) for k in keys[:5]) + (f" and {len(keys) - 5} more"
                                                        if len(keys) > 5 else "")) if keys else ""
        fields = ", ".join(sorted(self.payload))
        return (f"{self.operation} {self.entity}" + (f" {shown}" if shown else "")
                + (f" (fields: {fields})" if fields else ""))

    @property
    def payload_sha256(self) -> str:
        """The hash the audit trail records instead of the values."""
        return payload_sha256({"record_keys": self.record_keys, "payload": self.payload})

    def as_write(self, person: Person) -> dict[str, Any]:
        """The entry of ``metadata.writes`` of the message that carries it."""
        module, _, entity = self.entity.partition(".")
        return {"id": str(self.id), "tool": self.tool, "module": module, "entity": entity,
                "operation": self.operation, "status": "proposed",
                "acting_user_id": person.id, "acting_user_name": person.name,
                "summary": self.summary, "requires_approval": self.requires_approval,
                "record_count": len(self.record_keys), "outcome": None,
                "expires_at": self.expires_at.isoformat(), "resolved_at": None}


def _quoted(value: object) -> str:
    text = " ".join(str(value).split())
    return f'"{text[:_QUOTED_CHARS]}…"' if len(text) > _QUOTED_CHARS else f'"{text}"'


def _changes(values: Mapping[str, Any]) -> str:
    return ", ".join(f"{name} → {_quoted(value)}" for name, value in values.items())


def _title(record: Mapping[str, Any], locale: str) -> str:
    if "title" in record:
        return _quoted(record["title"])
    titles = [t.get("title", "") for t in record.get("translations", {}).values()]
    return _quoted(titles[0]) if titles else text(locale, "untitled")


def _bounded(summary: str) -> str:
    return summary if len(summary) <= MAX_SUMMARY_CHARS else summary[:MAX_SUMMARY_CHARS - 1] + "…"


def _visible_target(service: CrudService, person: Person, spec: CrudEntity, key: object
                    ) -> tuple[int, dict[str, Any]]:
    number = acl.parse_key(str(key), spec)
    with service.engine.connect() as conn:
        record = crud_sql.read_record(conn, spec.name, number, acl.row_scope(person, spec))
    if record is None:
        raise NotFoundError(f"no {spec.name} record {number}")
    acl.check_writable(person, record)
    return number, record


def draft(service: CrudService, person: Person, *, tool: str, spec: CrudEntity,
          operation: WriteOperation, expires_at: datetime, key: object = None,
          fields: object = None, where: Mapping[str, str] | None = None,
          keys: list[int] | None = None) -> Draft:
    """A proposal of ``operation`` on ``spec`` for ``person``, checked as the write would be:
    :class:`~ragplate.catalog.errors.PermissionDeniedError`,
    :class:`~ragplate.catalog.errors.NotFoundError` (a record they do not see, or another
    tenant's), :class:`~ragplate.catalog.errors.InvalidInputError` (the payload, a bulk
    matching nothing) or :class:`BulkTooLargeError`."""
    needed = base_operation(operation)
    acl.require(person, spec, needed)
    tenant = acl.write_tenant(person)
    approval = acl.needs_approval(person, spec)

    def made(payload: dict[str, Any], summary: str, record_keys: list[int]) -> Draft:
        return Draft(tool=tool, entity=spec.name, operation=operation, payload=payload,
                     summary=_bounded(summary), requires_approval=approval,
                     expires_at=expires_at, record_keys=record_keys)

    locale = person.locale  # the summary is read by the person who confirms it

    def said(template: str, **parts: object) -> str:
        return text(locale, template).format(entity=spec.name, **parts)

    if operation == "create":
        values = validate(spec, "create", fields if fields is not None else {})
        return made(values, said("create", changes=_changes(values)), [])
    if operation in ("update", "delete"):
        number, record = _visible_target(service, person, spec, key)
        if operation == "delete":
            return made({}, said("delete", key=number, title=_title(record, locale)),
                        [number])
        values = validate(spec, "update", fields if fields is not None else {})
        return made(values, said("update", key=number, title=_title(record, locale),
                                 changes=_changes(values)), [number])
    # A bulk: the records it matches now, in the person's tenant and view.
    values = (validate(spec, "update", fields if fields is not None else {})
              if operation == "bulk_update" else {})
    with service.engine.connect() as conn:
        matched = crud_sql.matching_keys(conn, spec.name, acl.row_scope(person, spec),
                                         tenant=tenant, where=dict(where or {}), keys=keys,
                                         limit=MAX_BULK_RECORDS + 1)
    if len(matched) > MAX_BULK_RECORDS:
        raise BulkTooLargeError(f"the selection matches more than {MAX_BULK_RECORDS} "
                                f"{spec.name} records: narrow it")
    if not matched:
        raise InvalidInputError(f"the selection matches no {spec.name} record the person "
                                "may change")
    selection = ", ".join(f"{k} = {_quoted(v)}" for k, v in sorted((where or {}).items()))
    parts = {"count": len(matched), "records": text(locale, "records" if len(matched) != 1
                                                     else "record"),
             "selection": f" ({selection})" if selection else ""}
    if operation == "bulk_delete":
        return made({}, said("bulk_delete", **parts), matched)
    return made(values, said("bulk_update", changes=_changes(values), **parts), matched)

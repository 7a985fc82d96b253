"""Application data over CRUD: the entities people read and write through the API (and,
later, through the assistant), their operations, permission names, approvals and the
row-level visibility rule each one applies beyond the tenant.

Only declarations live here; the decisions are :mod:`ragplate.tasks.crud`'s, the SQL
:mod:`ragplate.infra.crud`'s.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ragplate.catalog.errors import InvalidInputError, NotFoundError

Operation = Literal["read", "create", "update", "delete"]
OPERATIONS: tuple[Operation, ...] = ("read", "create", "update", "delete")
WRITE_OPERATIONS: tuple[Operation, ...] = ("create", "update", "delete")
#: The rule an entity applies to rows of a tenant the reader belongs to.
VisibilityRule = Literal["published_or_editor", "ticket_visibility"]
ModificationStatus = Literal["pending", "approved", "disapproved"]

TICKET_STATUSES: tuple[str, ...] = ("open", "closed")
TICKET_VISIBILITIES: tuple[str, ...] = ("tenant", "private")
#: Longest title and body a write may store.
MAX_TITLE_CHARS = 300
MAX_BODY_CHARS = 100_000


class FieldSpec(BaseModel):
    """One field of a write payload."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    max_chars: int = Field(ge=1)
    choices: tuple[str, ...] = Field(default=(), description="Accepted values; () = any text.")
    blank_ok: bool = Field(default=False, description="Whether an empty text is accepted.")


class CrudEntity(BaseModel):
    """An entity of the CRUD service: its name, approvals and visibility rule."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(pattern=r"^[a-z][a-z0-9_]*\.[a-z][a-z0-9_]*$",
                      description="module.entity, e.g. cms.contents.")
    moderated: bool = Field(description="Writes by a person without the approve permission "
                            "become pending modifications.")
    visibility: VisibilityRule
    fields: tuple[FieldSpec, ...]
    create_required: tuple[str, ...] = Field(description="Fields a create must carry.")
    #: Fields a payload may carry but that are not stored on the record itself (the locale
    #: of a translation).
    selectors: tuple[str, ...] = ()

    @property
    def module(self) -> str:
        """The module part of the name (``cms`` of ``cms.contents``)."""
        return self.name.split(".", 1)[0]

    def permission(self, operation: Operation) -> str:
        """``{module}.{entity}.{operation}``, e.g. ``cms.contents.update``."""
        return f"{self.name}.{operation}"

    @property
    def approve_permission(self) -> str:
        """Who holds it writes directly and decides others' pending modifications."""
        return f"{self.name}.approve"

    def field(self, name: str) -> FieldSpec:
        """The declared field ``name`` (KeyError when undeclared)."""
        for spec in self.fields:
            if spec.name == name:
                return spec
        raise KeyError(name)


CMS_CONTENTS = CrudEntity(
    name="cms.contents",
    moderated=False,
    visibility="published_or_editor",
    fields=(
        FieldSpec(name="locale", max_chars=35),
        FieldSpec(name="title", max_chars=MAX_TITLE_CHARS),
        FieldSpec(name="body", max_chars=MAX_BODY_CHARS, blank_ok=True),
        FieldSpec(name="status", max_chars=20, choices=("draft", "published", "archived")),
    ),
    create_required=("locale", "title", "body"),
    selectors=("locale",),
)

SAO_TICKETS = CrudEntity(
    name="sao.tickets",
    moderated=True,
    visibility="ticket_visibility",
    fields=(
        FieldSpec(name="title", max_chars=MAX_TITLE_CHARS),
        FieldSpec(name="body", max_chars=MAX_BODY_CHARS, blank_ok=True),
        FieldSpec(name="status", max_chars=20, choices=TICKET_STATUSES),
        FieldSpec(name="visibility", max_chars=20, choices=TICKET_VISIBILITIES),
    ),
    create_required=("title", "body"),
)

CRUD_ENTITIES: dict[str, CrudEntity] = {e.name: e for e in (CMS_CONTENTS, SAO_TICKETS)}


class UnknownCrudEntityError(NotFoundError):
    """A ``module.entity`` the CRUD service does not serve. HTTP 404, naming it."""

    def __init__(self, name: str) -> None:
        super().__init__(f"unknown entity '{name}' (known: {', '.join(sorted(CRUD_ENTITIES))})")
        self.name = name

    def __reduce__(self) -> tuple[Any, ...]:
        return (self.__class__, (self.name,))


class AlreadyDecidedError(InvalidInputError):
    """A pending modification that was approved or disapproved meanwhile. HTTP 409."""

    http_status = 409


def crud_entity(name: str) -> CrudEntity:
    """The CRUD entity called ``name``; :class:`UnknownCrudEntityError` naming it."""
    try:
        return CRUD_ENTITIES[name]
    except KeyError:
        raise UnknownCrudEntityError(name) from None


@dataclass(frozen=True)
class RowScope:
    """Which rows a reader sees, as data for the SQL (``infra.crud``) to apply.

    ``statuses``: the record statuses visible (``None``: every one). ``open_visibilities``
    with ``reporter_id``: rows whose visibility is among the open ones, or reported by that
    person (``open_visibilities`` ``None``: no visibility rule).
    """

    tenants: tuple[str, ...]
    statuses: tuple[str, ...] | None = None
    open_visibilities: tuple[str, ...] | None = None
    reporter_id: int | None = None


@dataclass(frozen=True)
class WriteOutcome:
    """What a write did: ``applied`` (``record`` is the record as saved, ``None`` after a
    delete) or ``pending_approval`` (``modification_id`` waits for an approver)."""

    status: Literal["applied", "pending_approval"]
    entity: str
    operation: Operation
    record: dict[str, Any] | None = None
    modification_id: uuid.UUID | None = None

    def as_dict(self) -> dict[str, Any]:
        """The JSON shape (HTTP answers, and later the assistant's outcomes)."""
        return {"status": self.status, "entity": self.entity, "operation": self.operation,
                "record": self.record,
                "modification_id": None if self.modification_id is None
                else str(self.modification_id)}

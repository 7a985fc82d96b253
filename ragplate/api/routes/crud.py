"""``/app/crud/…``: application data as the signed-in person, through the CRUD service
(:mod:`ragplate.tasks.crud.service`), which decides permission and row-level ACL at each
call; and the approvals of moderated entities.

A write answers 201/200 when applied and 202 when it waits for an approver.
"""

from __future__ import annotations

import uuid
from enum import Enum
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query, Response, status
from pydantic import BaseModel, ConfigDict, Field

from ragplate.api.deps import CrudDep, KnownQuery, MemberDep
from ragplate.api.errors import AUTH_RESPONSES, ERROR_RESPONSES, ErrorBody
from ragplate.api.fields import StrictRequest
from ragplate.catalog.crud import (
    CRUD_ENTITIES,
    MAX_BODY_CHARS,
    MAX_TITLE_CHARS,
    UnknownCrudEntityError,
    WriteOutcome,
)
from ragplate.catalog.people import LOCALE_PATTERN
from ragplate.tasks.crud.service import MAX_LIMIT, MAX_OFFSET

router = APIRouter(prefix="/app/crud", tags=["application data"])


class OutcomeOut(BaseModel):
    """What a write did: ``applied`` (``record`` as saved; ``null`` after a delete) or
    ``pending_approval`` (``modification_id`` waits for an approver)."""

    status: Literal["applied", "pending_approval"]
    entity: str
    operation: Literal["create", "update", "delete"]
    record: dict[str, Any] | None
    modification_id: str | None


class RecordPage(BaseModel):
    """A page of records, by key."""

    items: list[dict[str, Any]]
    total: int = Field(description="Records the person sees in all.")
    limit: int
    offset: int


class ModificationOut(BaseModel):
    """A modification of a moderated entity and its decision."""

    id: str
    entity: str
    record_key: str | None = Field(description="null for a create.")
    operation: Literal["create", "update", "delete"]
    payload: dict[str, Any]
    payload_sha256: str
    requested_by: int | None = Field(description="null once that person was deleted.")
    tenant: str
    status: Literal["pending", "approved", "disapproved"]
    decided_by: int | None
    decided_at: str | None
    created_at: str


#: JSON Schema patterns of the service's checks, so that the OpenAPI document says what a
#: write accepts (the service keeps its own messages, naming the field).
_LOCALE = LOCALE_PATTERN.pattern
_TEXT = "^[^\\x00]*$"
_NOT_BLANK = "^[^\\x00]*[^\\x00\\s][^\\x00]*$"
ContentStatus = Literal["draft", "published", "archived"]
TicketStatus = Literal["open", "closed"]
TicketVisibility = Literal["tenant", "private"]


def _title(required: bool) -> Any:
    return Field(... if required else None, max_length=MAX_TITLE_CHARS,
                 json_schema_extra={"pattern": _NOT_BLANK})


def _body(required: bool) -> Any:
    return Field(... if required else None, max_length=MAX_BODY_CHARS,
                 json_schema_extra={"pattern": _TEXT})


def _choice() -> Any:
    return Field(default=None)


def _locale(required: bool) -> Any:
    return Field(... if required else None, max_length=35,
                 json_schema_extra={"pattern": _LOCALE})


# The optional fields have no null: a field is sent with a value or left out (the default
# is never validated, so an absent field is simply not in the payload).
class ContentCreate(StrictRequest):
    """A new ``cms.contents`` record with its first translation (status default draft)."""

    locale: str = _locale(True)
    title: str = _title(True)
    body: str = _body(True)
    status: ContentStatus = _choice()


class ContentUpdate(StrictRequest):
    """Changes to a ``cms.contents`` record: its status, and/or the title and body of the
    translation ``locale`` names (a new locale needs both)."""

    model_config = ConfigDict(json_schema_extra={"minProperties": 1})

    locale: str = _locale(False)
    title: str = _title(False)
    body: str = _body(False)
    status: ContentStatus = _choice()


class TicketCreate(StrictRequest):
    """A new ``sao.tickets`` ticket (status default open, visibility default tenant)."""

    title: str = _title(True)
    body: str = _body(True)
    status: TicketStatus = _choice()
    visibility: TicketVisibility = _choice()


class TicketUpdate(StrictRequest):
    """Changes to a ``sao.tickets`` ticket."""

    model_config = ConfigDict(json_schema_extra={"minProperties": 1})

    title: str = _title(False)
    body: str = _body(False)
    status: TicketStatus = _choice()
    visibility: TicketVisibility = _choice()


#: The create and update bodies of each entity.
BODIES: dict[str, tuple[type[StrictRequest], type[StrictRequest]]] = {
    "cms.contents": (ContentCreate, ContentUpdate),
    "sao.tickets": (TicketCreate, TicketUpdate),
}


_NOT_FOUND = {"model": ErrorBody, "description": "No such entity (named), or no such record "
              "this person may see."}
READ_RESPONSES: dict[int | str, dict[str, Any]] = {
    **AUTH_RESPONSES, **ERROR_RESPONSES, 404: _NOT_FOUND}
WRITE_RESPONSES: dict[int | str, dict[str, Any]] = {
    **READ_RESPONSES,
    202: {"model": OutcomeOut, "description": "Stored for approval (pending_approval); "
          "nothing changed yet."}}
DECIDE_RESPONSES: dict[int | str, dict[str, Any]] = {
    **AUTH_RESPONSES, **ERROR_RESPONSES,
    404: {"model": ErrorBody, "description": "No such modification this person may decide, "
          "or its record is gone."},
    409: {"model": ErrorBody, "description": "The modification is already decided."}}


def _answer(outcome: WriteOutcome, response: Response, applied: int) -> OutcomeOut:
    response.status_code = (applied if outcome.status == "applied"
                            else status.HTTP_202_ACCEPTED)
    return OutcomeOut.model_validate(outcome.as_dict())




def _fields(body: StrictRequest) -> dict[str, Any]:
    return body.model_dump(exclude_unset=True)


@router.get("/approvals", response_model=list[ModificationOut],
            responses={**AUTH_RESPONSES, **ERROR_RESPONSES})
def list_approvals(person: MemberDep, _query: KnownQuery, crud: CrudDep
                   ) -> list[ModificationOut]:
    """Pending modifications this person may decide (their own excluded), oldest first."""
    return [ModificationOut.model_validate(m) for m in crud.pending(person)]


@router.post("/approvals/{modification_id}/approve", response_model=OutcomeOut,
             responses=DECIDE_RESPONSES)
def approve(modification_id: uuid.UUID, person: MemberDep, _query: KnownQuery,
            crud: CrudDep) -> OutcomeOut:
    """Apply a pending modification (once, whoever else approves it at the same time)."""
    return OutcomeOut.model_validate(
        crud.approve(person, modification_id=modification_id).as_dict())


@router.post("/approvals/{modification_id}/disapprove", response_model=ModificationOut,
             responses=DECIDE_RESPONSES)
def disapprove(modification_id: uuid.UUID, person: MemberDep, _query: KnownQuery,
               crud: CrudDep) -> ModificationOut:
    """Disapprove a pending modification; the record is left unchanged."""
    return ModificationOut.model_validate(
        crud.disapprove(person, modification_id=modification_id))


def _entity_routes(name: str, create_body: type[StrictRequest],
                   update_body: type[StrictRequest]) -> None:
    """The five routes of one entity, under its own paths: a generic ``{module}/{entity}``
    template would also match ``approvals/{id}/approve`` and advertise its methods there."""
    module, entity = name.split(".", 1)
    base = f"/{module}/{entity}"
    tags: list[str | Enum] = [f"application data: {name}"]

    @router.get(base, response_model=RecordPage, responses=READ_RESPONSES, tags=tags,
                summary=f"List {name}")
    def list_records(person: MemberDep, crud: CrudDep,
                     _query: KnownQuery,
                     limit: Annotated[int, Query(ge=1, le=MAX_LIMIT)] = 20,
                     offset: Annotated[int, Query(ge=0, le=MAX_OFFSET)] = 0,
                     locale: Annotated[str | None, Query(max_length=35, pattern=_LOCALE)] = None
                     ) -> RecordPage:
        """The records this person may see, by key."""
        return RecordPage.model_validate(crud.list(person, entity=name, limit=limit,
                                                   offset=offset, locale=locale))

    @router.get(base + "/{key}", response_model=dict[str, Any], responses=READ_RESPONSES,
                tags=tags, summary=f"Read one of {name}")
    def read_record(key: str, person: MemberDep, _query: KnownQuery, crud: CrudDep
                    ) -> dict[str, Any]:
        """One record this person may see."""
        return crud.read(person, entity=name, key=key)

    @router.post(base, response_model=OutcomeOut, status_code=status.HTTP_201_CREATED,
                 responses=WRITE_RESPONSES, tags=tags, summary=f"Create one of {name}")
    def create_record(body: StrictRequest, response: Response, person: MemberDep,
                      _query: KnownQuery, crud: CrudDep) -> OutcomeOut:
        """Create a record in the person's tenant: 201 applied, 202 pending approval."""
        outcome = crud.create(person, entity=name, payload=_fields(body))
        return _answer(outcome, response, status.HTTP_201_CREATED)

    # FastAPI reads the body's model from the annotation; the entity's own model is set
    # here, as a closure's local cannot be named in a (postponed) annotation.
    create_record.__annotations__["body"] = create_body

    @router.patch(base + "/{key}", response_model=OutcomeOut, responses=WRITE_RESPONSES,
                  tags=tags, summary=f"Change one of {name}")
    def update_record(key: str, body: StrictRequest, response: Response, person: MemberDep,
                      _query: KnownQuery, crud: CrudDep) -> OutcomeOut:
        """Change fields of a record: 200 applied, 202 pending approval."""
        outcome = crud.update(person, entity=name, key=key, changes=_fields(body))
        return _answer(outcome, response, status.HTTP_200_OK)

    update_record.__annotations__["body"] = update_body

    @router.delete(base + "/{key}", response_model=OutcomeOut, responses=WRITE_RESPONSES,
                   tags=tags, summary=f"Delete one of {name}")
    def delete_record(key: str, response: Response, person: MemberDep, _query: KnownQuery,
                      crud: CrudDep) -> OutcomeOut:
        """Delete a record: 200 applied, 202 pending approval."""
        outcome = crud.delete(person, entity=name, key=key)
        return _answer(outcome, response, status.HTTP_200_OK)


for _name in CRUD_ENTITIES:
    _entity_routes(_name, *BODIES[_name])


# Any other module/entity: a 404 naming it (left out of the OpenAPI document, which lists
# the entities that exist). The person is authenticated first, as on every data route.
# Only the methods an entity's paths have, so that another method on a known entity's path
# is still a 405 (these routes come after the entities', which answer first).
@router.api_route("/{module}/{entity}", methods=["GET", "POST"], include_in_schema=False)
def unknown_entity(module: str, entity: str, person: MemberDep) -> None:
    """An entity the service does not serve."""
    raise UnknownCrudEntityError(f"{module}.{entity}")


@router.api_route("/{module}/{entity}/{key}", methods=["GET", "PATCH", "DELETE"],
                  include_in_schema=False)
def unknown_entity_record(module: str, entity: str, key: str, person: MemberDep) -> None:
    """A record of an entity the service does not serve."""
    raise UnknownCrudEntityError(f"{module}.{entity}")

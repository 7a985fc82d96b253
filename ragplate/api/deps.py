"""FastAPI dependencies (``Annotated`` aliases used by the routers).

Who is asking comes from the ``Authorization: Bearer`` header only, read again on every
request (a revoked token stops working at once): :data:`PersonDep` any person with a valid
token, :data:`MemberDep` one who may use the assistant and application search (not a guest),
:data:`DeveloperDep` one who may search the developer index.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPBearer

from ragplate.catalog.errors import PermissionDeniedError
from ragplate.catalog.people import DEVELOPER_PERMISSION, Person
from ragplate.infra.runtime import Runtime
from ragplate.tasks.crud.service import CrudService
from ragplate.tasks.people.accounts import authenticate
from ragplate.tasks.writes.turn import crud_service

# Only for the OpenAPI document (the lock icon and the scheme); auto_error is off so a
# missing header is our JSON 401, not FastAPI's 403.
_bearer = HTTPBearer(auto_error=False, description="An API token: ragplate users token NAME")


def get_runtime(request: Request) -> Runtime:
    """The process's runtime, created once at startup."""
    runtime: Runtime = request.app.state.runtime
    return runtime


RuntimeDep = Annotated[Runtime, Depends(get_runtime)]


def get_person(request: Request, runtime: RuntimeDep,
               _scheme: Annotated[object, Depends(_bearer)] = None) -> Person:
    """The person of the request's bearer token (401 without a valid one)."""
    return authenticate(runtime.engine, request.headers.get("authorization"))


PersonDep = Annotated[Person, Depends(get_person)]


def get_member(person: PersonDep) -> Person:
    """A person who may use the assistant and application search: a guest may not (403)."""
    if person.is_guest:
        raise PermissionDeniedError("a guest cannot use the assistant or application search")
    return person


MemberDep = Annotated[Person, Depends(get_member)]


def get_developer(person: PersonDep) -> Person:
    """A person holding the developer role (``docs.developer``), not a guest (403)."""
    if person.is_guest:
        raise PermissionDeniedError("a guest cannot search the developer index")
    if not person.holds(DEVELOPER_PERMISSION):
        raise PermissionDeniedError(
            f"searching the developer index needs the {DEVELOPER_PERMISSION} permission")
    return person


DeveloperDep = Annotated[Person, Depends(get_developer)]


def get_crud(runtime: RuntimeDep) -> CrudService:
    """The CRUD service on the process's database and embedders."""
    return crud_service(runtime)


CrudDep = Annotated[CrudService, Depends(get_crud)]

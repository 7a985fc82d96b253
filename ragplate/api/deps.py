"""FastAPI dependencies (``Annotated`` aliases used by the routers).

Who is asking comes from the ``Authorization: Bearer`` header only, read again on every
request (a revoked token stops working at once): :data:`PersonDep` any person with a valid
token, :data:`MemberDep` one who may use the assistant and application search (not a guest),
:data:`DeveloperDep` one who may search the developer index. :data:`KnownQuery` refuses
what a route would silently ignore: a query parameter it does not define, and a body when
it takes none.
"""

from __future__ import annotations

from collections import Counter
from typing import Annotated

from fastapi import Depends, Request
from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute
from fastapi.security import HTTPBearer

from ragplate.api.access_log import repeatable
from ragplate.catalog.errors import AuthenticationError, InvalidInputError, PermissionDeniedError
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
    """The person of the request's bearer token (401 without a valid one, or with more
    than one Authorization header: which one a proxy or a server reads differs, so the
    request names no one for certain)."""
    sent = request.headers.getlist("authorization")
    if len(sent) > 1:
        raise AuthenticationError("more than one Authorization header: send one")
    return authenticate(runtime.engine, sent[0] if sent else None)


PersonDep = Annotated[Person, Depends(get_person)]


def get_member(person: PersonDep) -> Person:
    """A person who may use the assistant, application search and application data: a
    guest may not (403)."""
    if person.is_guest:
        raise PermissionDeniedError("a guest cannot use the assistant, application search or "
                                    "application data")
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


def _declared(dependant: Dependant) -> tuple[list[str], bool]:
    """The query parameters a route declares and whether it reads a body, its
    dependencies' included."""
    names: dict[str, None] = {}
    body = False
    pending = [dependant]
    while pending:
        current = pending.pop(0)
        names.update(dict.fromkeys(p.alias for p in current.query_params))
        body = body or bool(current.body_params)
        pending.extend(current.dependencies)
    return list(names), body


async def _known_request(request: Request) -> None:
    """A query parameter the route does not define is refused, as a body's unknown field is
    (a client sending ``tenant`` must learn it is not honoured), and so is one it defines
    given more than once, and a body sent to a route that reads none (``{"force": true}``
    would otherwise be dropped unread)."""
    route = request.scope.get("route")
    declared, reads_body = (_declared(route.dependant) if isinstance(route, APIRoute)
                            else ([], False))
    given = Counter(name for name, _ in request.query_params.multi_items())
    for name, times in given.items():
        if name in declared and times > 1:
            # Which one counts would be FastAPI's choice (the last), not the client's.
            raise InvalidInputError(f"{name!r}: given {times} times; give it once")
        if name not in declared:
            named = (repr(name) if repeatable(name)
                     else "an unknown query parameter (its name is not repeated)")
            defined = ", ".join(declared) if declared else "it defines none"
            raise InvalidInputError(f"{named}: not a query parameter of this route "
                                    f"({defined})")
    # The bytes, not the headers: an empty chunked body is no body, and one sent without
    # a length header is one. The body limit middleware bounds what is read here.
    if not reads_body and await request.body():
        raise InvalidInputError("this route takes no body; send the request without one")


#: Put after the person, so that a request without a token is a 401 whatever it asks. A
#: route reading its body through ``Request`` itself declares no body: it must not use this.
KnownQuery = Annotated[None, Depends(_known_request)]

"""How errors leave the API: JSON ``{"error": CLASS, "detail": …}`` with a status.

- ragplate errors carry their own status (:class:`~ragplate.catalog.errors.RagplateError`),
  and a ``Retry-After`` header when they pass by themselves (``retry_after``);
- a database connection that fails while serving is a 503 ``DatabaseError``, not a 500;
- request validation is a 422 whose ``detail`` lists ``{loc, msg, type}`` per problem,
  never echoing the input back (it may be huge, or not encodable as JSON), at most
  :data:`MAX_PROBLEMS` of them (then one ``too_many_errors`` entry counting the rest), so
  a body of a thousand unknown keys cannot make a response larger than itself; it is
  rendered off the event loop;
- text that is not valid Unicode (an unpaired surrogate) that reaches past validation is
  a 422 too, never a 500;
- routing errors (404, 405) keep their status with the same body shape.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from http import HTTPStatus
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException

from ragplate.api.access_log import repeatable, without_tokens
from ragplate.catalog.errors import RagplateError
from ragplate.catalog.text import without_paths
from ragplate.infra.database import CONNECTION_ERRORS, connection_lost


class ErrorBody(BaseModel):
    """An error: its class and what went wrong."""

    error: str = Field(description="e.g. DatabaseError, UnknownEntityError, ValidationError")
    detail: str | list[dict[str, Any]] = Field(
        description="A message; for ValidationError one {loc, msg, type} per problem."
    )


#: The answers of a route that needs a bearer token, for the OpenAPI document.
AUTH_RESPONSES: dict[int | str, dict[str, Any]] = {
    401: {"model": ErrorBody, "description": "No valid bearer token (missing, unknown, "
          "revoked or expired)."},
    403: {"model": ErrorBody, "description": "The token's person may not do this (a guest, "
          "or a permission is missing)."},
}

#: The error responses every route may give, for the OpenAPI document.
ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    400: {"model": ErrorBody, "description": "The body cannot be read as JSON (it is not "
          "UTF-8)."},
    413: {"model": ErrorBody, "description": "The body is larger than "
          "RAGPLATE_API_MAX_BODY_BYTES."},
    422: {"model": ErrorBody, "description": "Invalid request (fields named in detail)."},
    503: {"model": ErrorBody, "description": "PostgreSQL, the store or a model is unavailable."},
}


def public_detail(exc: RagplateError) -> str:
    """What a response says of an error: its message, without file system paths when the
    server is at fault (a 5xx), and never with a bearer token in it (an error naming the
    record key or entity a client sent would repeat a token sent there)."""
    return without_tokens(without_paths(str(exc)) if exc.http_status >= 500 else str(exc))


def error_response(status: int, detail: Any) -> JSONResponse:
    """The body of an HTTP-level error, named after its status (404 ``NotFound``)."""
    try:
        phrase = HTTPStatus(status).phrase
    except ValueError:
        phrase = "HTTP Error"
    return _body(phrase.title().replace(" ", "").replace("-", ""), detail, status)


def _body(error: str, detail: Any, status: int) -> JSONResponse:
    return JSONResponse(status_code=status, content={"error": error, "detail": detail})


#: What a problem's location says instead of an unknown field's name that may be a secret.
NOT_REPEATED = "(an unknown field, its name not repeated)"
#: A media type an error may repeat: letters only (no parameter, no digit: nothing that
#: may be a secret sent in the wrong header).
_MEDIA_TYPE = re.compile(r"[a-z]{1,20}/[a-z.+\-]{1,40}")
#: What FastAPI answers for a body it cannot decode (not UTF-8).
_UNPARSED = "There was an error parsing the body"
#: The most problems a validation error lists.
MAX_PROBLEMS = 20


def _location(error: Mapping[str, Any]) -> list[Any]:
    """Where a problem is; an unknown field's name only when it may be repeated."""
    loc = list(error.get("loc", ()))
    if (error.get("type") == "extra_forbidden" and loc and isinstance(loc[-1], str)
            and not repeatable(loc[-1])):
        loc[-1] = NOT_REPEATED
    return loc


def _json_type(kind: str) -> bool:
    """Whether FastAPI reads a body of media type ``kind`` as JSON."""
    return kind == "application/json" or (kind.startswith("application/")
                                          and kind.endswith("+json"))


def _problems(exc: RequestValidationError) -> list[dict[str, Any]]:
    # "input" and "ctx" are left out: they repeat what the caller sent.
    errors = exc.errors()
    problems: list[dict[str, Any]] = [
        {"loc": _location(e), "msg": str(e.get("msg", "")),
         "type": str(e.get("type", ""))} for e in errors[:MAX_PROBLEMS]]
    if len(errors) > MAX_PROBLEMS:
        problems.append({"loc": [], "msg": f"and {len(errors) - MAX_PROBLEMS} more problems",
                         "type": "too_many_errors"})
    return problems


_HTTP_METHODS = frozenset({"get", "put", "post", "delete", "options", "head", "patch", "trace"})


def _allowed_methods(request: Request, named: str) -> list[str]:
    """The methods of every route of the request's path: those the OpenAPI document
    declares for a matching path template, and those Starlette named (routes left out of
    the document, such as ``HEAD /health``)."""
    methods = {m.strip().upper() for m in named.split(",") if m.strip()}
    for template, operations in request.app.openapi().get("paths", {}).items():
        pattern = "^" + re.sub(r"\\\{[^/]+?\\\}", "[^/]+", re.escape(template)) + "$"
        if re.match(pattern, request.url.path):
            methods |= {m.upper() for m in operations if m in _HTTP_METHODS}
    return sorted(methods)


def install_error_handlers(app: FastAPI) -> None:
    """Register the translations above on ``app``."""

    @app.exception_handler(RagplateError)
    async def _ragplate(request: Request, exc: RagplateError) -> JSONResponse:
        response = _body(exc.__class__.__name__, public_detail(exc), exc.http_status)
        if exc.http_status == 401:  # RFC 6750: say which scheme is expected
            response.headers["WWW-Authenticate"] = 'Bearer realm="ragplate"'
        if exc.retry_after is not None:
            response.headers["Retry-After"] = str(exc.retry_after)
        return response

    async def _database(request: Request, exc: Exception) -> JSONResponse:
        lost = connection_lost(exc)  # type: ignore[arg-type]
        return _body(lost.__class__.__name__, str(lost), lost.http_status)

    for kind in CONNECTION_ERRORS:
        app.add_exception_handler(kind, _database)

    # A plain function: Starlette runs it in its thread pool, so rendering a large list of
    # problems never holds up the requests the event loop is serving.
    @app.exception_handler(RequestValidationError)
    def _validation(request: Request, exc: RequestValidationError) -> JSONResponse:
        if any(e.get("type") == "json_invalid" for e in exc.errors()):
            # Not a body that fails validation: one the JSON parser cannot read.
            return _body("BadRequest", "the body is not valid JSON", 400)
        problems = _problems(exc)
        kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if not _json_type(kind) and any(p["loc"] == ["body"] for p in problems):
            # FastAPI reads a body as JSON only under a JSON content type; otherwise the
            # JSON a client sent reads as bytes, and "not a valid dictionary" puzzles.
            sent = (kind if _MEDIA_TYPE.fullmatch(kind) else "another") if kind else "none"
            problems.append({"loc": ["header", "content-type"],
                             "msg": "the body is read as JSON only with content-type "
                                    f"application/json (this request sent {sent})",
                             "type": "content_type"})
        return _body("ValidationError", problems, 422)

    @app.exception_handler(UnicodeError)
    def _unicode(request: Request, exc: UnicodeError) -> JSONResponse:
        return _body("ValidationError", [{"loc": [], "msg": "text must be valid Unicode "
                                          "(no unpaired surrogate)", "type": "unicode_error"}],
                     422)

    @app.exception_handler(HTTPException)
    async def _http(request: Request, exc: HTTPException) -> JSONResponse:
        detail = exc.detail
        if (exc.status_code == 400 and detail == _UNPARSED  # FastAPI's words for any failure
                and isinstance(exc.__cause__, UnicodeDecodeError)):
            detail = "the body cannot be read: JSON must be UTF-8 text"
        response = error_response(exc.status_code, without_tokens(detail)
                                  if isinstance(detail, str) else detail)
        response.headers.update(exc.headers or {})
        if exc.status_code == 405:
            # Starlette names the methods of the first route of the path only; a path with
            # a GET and a POST route must list both.
            named = (exc.headers or {}).get("Allow", "")
            response.headers["Allow"] = ", ".join(_allowed_methods(request, named))
        return response

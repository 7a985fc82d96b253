"""How errors leave the API: JSON ``{"error": CLASS, "detail": …}`` with a status.

- ragplate errors carry their own status (:class:`~ragplate.catalog.errors.RagplateError`);
- a database connection that fails while serving is a 503 ``DatabaseError``, not a 500;
- request validation is a 422 whose ``detail`` lists ``{loc, msg, type}`` per problem,
  never echoing the input back (it may be huge, or not encodable as JSON);
- routing errors (404, 405) keep their status with the same body shape.
"""

from __future__ import annotations

from http import HTTPStatus
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException

from ragplate.catalog.errors import RagplateError
from ragplate.infra.database import CONNECTION_ERRORS, connection_lost


class ErrorBody(BaseModel):
    """An error: its class and what went wrong."""

    error: str = Field(description="e.g. DatabaseError, UnknownEntityError, ValidationError")
    detail: str | list[dict[str, Any]] = Field(
        description="A message; for ValidationError one {loc, msg, type} per problem."
    )


#: The error responses every route may give, for the OpenAPI document.
ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    422: {"model": ErrorBody, "description": "Invalid request (fields named in detail)."},
    503: {"model": ErrorBody, "description": "PostgreSQL, the store or a model is unavailable."},
}


def error_response(status: int, detail: Any) -> JSONResponse:
    """The body of an HTTP-level error, named after its status (404 ``NotFound``)."""
    try:
        phrase = HTTPStatus(status).phrase
    except ValueError:
        phrase = "HTTP Error"
    return _body(phrase.title().replace(" ", "").replace("-", ""), detail, status)


def _body(error: str, detail: Any, status: int) -> JSONResponse:
    return JSONResponse(status_code=status, content={"error": error, "detail": detail})


def _problems(exc: RequestValidationError) -> list[dict[str, Any]]:
    # "input" and "ctx" are left out: they repeat what the caller sent.
    return [{"loc": list(e.get("loc", ())), "msg": str(e.get("msg", "")),
             "type": str(e.get("type", ""))} for e in exc.errors()]


def install_error_handlers(app: FastAPI) -> None:
    """Register the translations above on ``app``."""

    @app.exception_handler(RagplateError)
    async def _ragplate(request: Request, exc: RagplateError) -> JSONResponse:
        return _body(exc.__class__.__name__, str(exc), exc.http_status)

    async def _database(request: Request, exc: Exception) -> JSONResponse:
        lost = connection_lost(exc)  # type: ignore[arg-type]
        return _body(lost.__class__.__name__, str(lost), lost.http_status)

    for kind in CONNECTION_ERRORS:
        app.add_exception_handler(kind, _database)

    @app.exception_handler(RequestValidationError)
    async def _validation(request: Request, exc: RequestValidationError) -> JSONResponse:
        return _body("ValidationError", _problems(exc), 422)

    @app.exception_handler(HTTPException)
    async def _http(request: Request, exc: HTTPException) -> JSONResponse:
        response = error_response(exc.status_code, exc.detail)
        response.headers.update(exc.headers or {})
        return response

"""``GET /health``: database, active profile and index counts."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from ragplate.api.deps import RuntimeDep
from ragplate.api.errors import public_detail
from ragplate.catalog.documents import INDEXES
from ragplate.catalog.errors import DatabaseError, RagplateError
from ragplate.infra.database import CONNECTION_ERRORS, connection_lost

router = APIRouter(tags=["health"])


class Health(BaseModel):
    """Service health."""

    status: str
    database: str
    active_profile: str | None
    indexes: dict[str, int]
    # No default: always sent (null when all is well), so required in the OpenAPI document.
    detail: str | None = Field(description="What is down; null when the status is ok.")


@router.head("/health", include_in_schema=False, response_model=None)  # probes use HEAD
@router.get("/health", response_model=Health,
            responses={503: {"model": Health, "description": "Something is down."}})
def health(runtime: RuntimeDep) -> Health | JSONResponse:
    """``ok`` with the chunk count of each index, or 503 naming what is wrong;
    ``database`` says whether PostgreSQL itself is the problem."""
    try:
        profile = runtime.active_profile()
        counts: dict[str, int] = {
            name: runtime.store(name, profile).count() for name in INDEXES
        }
    except CONNECTION_ERRORS as exc:
        return _unavailable(connection_lost(exc))
    except RagplateError as exc:
        return _unavailable(exc)
    return Health(status="ok", database="ok", active_profile=profile.key, indexes=counts,
                  detail=None)


def _unavailable(exc: RagplateError) -> JSONResponse:
    # A store reports a lost connection as its own error, caused by the connection's.
    lost = isinstance(exc, DatabaseError) or isinstance(exc.__cause__, CONNECTION_ERRORS)
    database = "unavailable" if lost else "ok"
    body = Health(status="unavailable", database=database, active_profile=None, indexes={},
                  detail=public_detail(exc))
    return JSONResponse(status_code=503, content=body.model_dump())

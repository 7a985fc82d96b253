"""``GET /health``: database, active profile and index counts."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import JSONResponse
from pydantic import BaseModel

from ragplate.api.deps import RuntimeDep
from ragplate.catalog.documents import INDEXES
from ragplate.catalog.errors import RagplateError

router = APIRouter(tags=["health"])


class Health(BaseModel):
    """Service health."""

    status: str
    database: str
    active_profile: str | None
    indexes: dict[str, int]
    detail: str | None = None


@router.get("/health", response_model=Health)
def health(runtime: RuntimeDep) -> Health | JSONResponse:
    """``ok`` with the chunk count of each index, or 503 naming what is wrong."""
    try:
        profile = runtime.active_profile()
        counts: dict[str, int] = {
            name: runtime.store(name, profile).count() for name in INDEXES
        }
    except RagplateError as exc:
        body = Health(status="unavailable", database="unavailable", active_profile=None,
                      indexes={}, detail=str(exc))
        return JSONResponse(status_code=503, content=body.model_dump())
    return Health(status="ok", database="ok", active_profile=profile.key, indexes=counts)

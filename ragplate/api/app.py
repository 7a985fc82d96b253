"""The FastAPI application."""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from ragplate import __version__
from ragplate.api.routes import docs_search, health, search
from ragplate.catalog.errors import RagplateError
from ragplate.catalog.settings import Settings
from ragplate.infra.runtime import Runtime


def create_app(settings: Settings | None = None) -> FastAPI:
    """Build the app; errors of the ragplate hierarchy become JSON with their status."""
    app = FastAPI(
        title="ragplate",
        version=__version__,
        summary="Documentation retrieval with citations.",
        docs_url="/docs",
    )
    app.state.runtime = Runtime(settings) if settings is not None else Runtime()

    @app.exception_handler(RagplateError)
    async def _ragplate_error(request: Request, exc: RagplateError) -> JSONResponse:
        return JSONResponse(status_code=exc.http_status,
                            content={"error": exc.__class__.__name__, "detail": str(exc)})

    app.include_router(health.router)
    app.include_router(docs_search.router)
    app.include_router(search.router)
    return app

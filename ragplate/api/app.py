"""The FastAPI application."""

from __future__ import annotations

from fastapi import FastAPI

from ragplate import __version__
from ragplate.api.errors import install_error_handlers
from ragplate.api.routes import docs_search, health, search
from ragplate.catalog.settings import Settings
from ragplate.infra.runtime import Runtime


def create_app(settings: Settings | None = None) -> FastAPI:
    """Build the app; every error leaves as JSON with its status (see ``api.errors``)."""
    app = FastAPI(
        title="ragplate",
        version=__version__,
        summary="Documentation retrieval with citations.",
        docs_url="/docs",
    )
    app.state.runtime = Runtime(settings) if settings is not None else Runtime()

    install_error_handlers(app)
    app.include_router(health.router)
    app.include_router(docs_search.router)
    app.include_router(search.router)
    return app

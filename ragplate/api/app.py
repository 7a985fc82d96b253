"""The FastAPI application."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI

from ragplate import __version__
from ragplate.api import access_log
from ragplate.api.body_limit import BodyLimit
from ragplate.api.errors import install_error_handlers
from ragplate.api.routes import (
    agent,
    assistant,
    assistant_writes,
    crud,
    docs_search,
    health,
    search,
)
from ragplate.api.routes.chat_page import install_chat_page
from ragplate.api.routes.docs_ui import install_docs_page
from ragplate.catalog.entities import entities
from ragplate.catalog.settings import Settings
from ragplate.infra.environment import get_settings
from ragplate.infra.runtime import Runtime
from ragplate.tasks.writes import audit

logger = logging.getLogger("ragplate.analytics")


#: How long a stopping server waits for the query records still queued to be written.
DRAIN_SECONDS = 5.0


@asynccontextmanager
async def _lifespan(app: FastAPI) -> AsyncIterator[None]:
    yield
    await asyncio.to_thread(drain_query_records, app.state.runtime)


def drain_query_records(runtime: Runtime, timeout: float = DRAIN_SECONDS) -> bool:
    """At shutdown, wait for the query records answers handed to the writer thread (a
    daemon, which would die with the process), at most ``timeout`` seconds; whether none
    is left. A process that never logged one has no writer, and nothing to wait for."""
    writer = runtime.__dict__.get("query_writer")
    if writer is None or writer.drain(timeout):
        return True
    logger.warning("the server stopped with query records still queued after %.0f s: they "
                   "were not written", timeout)
    return False


def create_app(settings: Settings | None = None) -> FastAPI:
    """Build the app; every error leaves as JSON with its status (see ``api.errors``)."""
    app = FastAPI(
        lifespan=_lifespan,
        title="ragplate",
        version=__version__,
        summary="Documentation retrieval and a guarded assistant, with citations.",
        # The OpenAPI page is served from bundled assets (routes.docs_ui), not a CDN.
        docs_url=None,
        redoc_url=None,
        # A path with a trailing slash is an unknown path (the JSON 404), not Starlette's
        # bare 307 redirect, whose Location is built on the Host header the client sent.
        redirect_slashes=False,
    )
    app.state.runtime = Runtime(settings if settings is not None else get_settings())

    install_error_handlers(app)
    access_log.install()
    audit.show_in_log()
    app.add_middleware(BodyLimit, max_bytes=app.state.runtime.settings.api_max_body_bytes)
    app.include_router(health.router)
    app.include_router(docs_search.router)
    app.include_router(search.router)
    app.include_router(assistant.router)
    app.include_router(agent.router)
    # Before the CRUD routes: their catch-all would answer these paths 404.
    app.include_router(assistant_writes.router)
    app.include_router(crud.router)
    search.document_entities(app, list(entities(app.state.runtime.settings)))
    install_docs_page(app)
    install_chat_page(app)
    return app

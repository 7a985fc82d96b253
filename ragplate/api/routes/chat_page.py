"""``GET /app``: the assistant's chat page, plain HTML, CSS and JavaScript modules shipped
inside the package (``ragplate/api/static/app``), so it works without a CDN or a build step.

The page itself is public: it holds no data, and every call it makes to ``/app/ai/…``
carries the bearer token the person signs in with (kept in the tab's ``sessionStorage``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi import FastAPI
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles
from starlette.responses import Response

#: The page's files.
STATIC = Path(__file__).resolve().parents[1] / "static" / "app"
#: Where they are served.
ASSETS = "/app/static"

# The page runs its own files only: an injected script could read the token from
# sessionStorage, so nothing inline and nothing from another origin may run, and no other
# site may frame the page.
HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}


class _Assets(StaticFiles):
    """The page's files with the page's headers (``index.html`` is reachable here too, and
    must not be framed or run anything else there either), revalidated on every load (a 304
    while unchanged), so a browser never pairs an upgraded server with the scripts it cached
    from the last version."""

    def file_response(self, *args: Any, **kwargs: Any) -> Response:
        response = super().file_response(*args, **kwargs)
        response.headers.update(HEADERS)
        return response


def install_chat_page(app: FastAPI, *, path: str = "/app") -> None:
    """Serve the chat page at ``path`` with its files under :data:`ASSETS`."""
    app.mount(ASSETS, _Assets(directory=STATIC), name="chat-page-assets")

    @app.api_route(path, methods=["GET", "HEAD"], include_in_schema=False)
    def chat_page() -> FileResponse:
        return FileResponse(STATIC / "index.html", media_type="text/html; charset=utf-8",
                            headers=HEADERS)

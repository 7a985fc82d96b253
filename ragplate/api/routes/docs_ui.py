"""``GET /docs``: the interactive OpenAPI page, served from assets bundled with ragplate.

FastAPI's own page loads Swagger UI from a CDN, which leaves it blank where the API is
deployed without internet access; here the same page loads the copy shipped by the
``swagger-ui-bundle-v2`` package (Swagger UI 5, which reads OpenAPI 3.1).
"""

from __future__ import annotations

from fastapi import FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles
from swagger_ui_bundle import swagger_ui_path

#: Where the bundled Swagger UI files are served.
ASSETS = "/docs/assets"


def install_docs_page(app: FastAPI, *, path: str = "/docs") -> None:
    """Serve the OpenAPI page at ``path`` with its assets under :data:`ASSETS`."""
    app.mount(ASSETS, StaticFiles(directory=swagger_ui_path), name="docs-assets")

    @app.get(path, include_in_schema=False)
    def docs_page() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url=app.openapi_url or "/openapi.json",
            title=f"{app.title} — API",
            swagger_js_url=f"{ASSETS}/swagger-ui-bundle.js",
            swagger_css_url=f"{ASSETS}/swagger-ui.css",
            swagger_favicon_url=f"{ASSETS}/favicon-32x32.png",
        )

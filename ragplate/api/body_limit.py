"""A cap on request bodies, applied before anything reads them.

Request models cap their fields, but only after the whole body was received and parsed:
without a cap here a client could make the API buffer and parse any amount of JSON.
A declared ``Content-Length`` over the cap is refused at once; a body sent without one
(chunked) is counted as it arrives.
"""

from __future__ import annotations

from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ragplate.api.errors import error_response


def _too_large(limit: int) -> HTTPException:
    # FastAPI re-raises an HTTPException met while reading the body, so the app's error
    # handler answers it like any other (a generic exception would become a 400).
    return HTTPException(status_code=413,
                         detail=f"request body larger than {limit} bytes "
                                f"(RAGPLATE_API_MAX_BODY_BYTES)")


class BodyLimit:
    """ASGI middleware refusing bodies over ``max_bytes`` with a 413."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length", b"")
        if declared.isdigit() and int(declared) > self.max_bytes:
            await self._refuse(scope, send)
            return
        received = 0

        async def counted() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    raise _too_large(self.max_bytes)
            return message

        await self.app(scope, counted, send)

    async def _refuse(self, scope: Scope, send: Send) -> None:
        response = error_response(413, _too_large(self.max_bytes).detail)
        # The unread body stays on the connection: close it rather than reuse it.
        response.headers["connection"] = "close"
        await response(scope, _nothing, send)


async def _nothing() -> Message:
    return {"type": "http.disconnect"}

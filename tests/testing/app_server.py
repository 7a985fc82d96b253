"""The app served by uvicorn on a free loopback port, in a thread: for tests that need a
real HTTP connection (streamed answers, a browser)."""

from __future__ import annotations

import threading
import time

import uvicorn

from ragplate.api.app import create_app
from ragplate.catalog.settings import Settings
from tests.conftest import free_port


class AppServer:
    """``with AppServer(settings) as server:`` … ``server.url``."""

    def __init__(self, settings: Settings) -> None:
        self.port = free_port()
        self.server = uvicorn.Server(uvicorn.Config(create_app(settings), host="127.0.0.1",
                                                    port=self.port, log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    @property
    def url(self) -> str:
        """Where the app answers."""
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> AppServer:
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.05)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=30)

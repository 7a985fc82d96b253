"""A stopping server writes the query records its answers left queued: the writer is a
daemon thread, which would die with the process and lose them."""

from __future__ import annotations

import logging
import threading
import time
import warnings
from typing import Any

import pytest

with warnings.catch_warnings():
    # Starlette nudges towards the httpx2 package; the httpx client works the same here.
    warnings.filterwarnings("ignore", message="Using `httpx` with `starlette.testclient`")
    from fastapi.testclient import TestClient

from ragplate.api.app import create_app, drain_query_records
from ragplate.catalog.settings import Settings
from ragplate.infra.analytics_writer import QueryWriter


def test_a_stopping_server_writes_the_query_records_still_queued(settings: Settings) -> None:
    written: list[int] = []

    def slow(record: dict[str, Any], user_id: int) -> None:
        time.sleep(0.02)
        written.append(record["n"])

    app = create_app(settings)
    with TestClient(app):
        writer = QueryWriter(slow)
        app.state.runtime.__dict__["query_writer"] = writer
        for n in range(30):
            writer.submit({"n": n}, user_id=1)
        assert len(written) < 30
    assert written == list(range(30))


def test_records_the_store_will_not_take_in_time_are_said_lost(
        settings: Settings, caplog: pytest.LogCaptureFixture) -> None:
    app = create_app(settings)
    runtime = app.state.runtime
    assert drain_query_records(runtime, timeout=0.01)  # nothing was ever logged
    held = threading.Event()
    writer = QueryWriter(lambda record, user_id: held.wait(5))
    runtime.__dict__["query_writer"] = writer
    writer.submit({"n": 1}, user_id=1)
    with caplog.at_level(logging.WARNING, logger="ragplate.analytics"):
        assert not drain_query_records(runtime, timeout=0.05)
    held.set()
    assert "still queued" in caplog.text

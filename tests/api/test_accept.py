"""Reading an ``Accept`` header (``ragplate.api.accept``): ranges, wildcards and q values."""

from __future__ import annotations

import pytest

from ragplate.api.accept import accepts

STREAM = "text/event-stream"


@pytest.mark.parametrize("header", [
    None, "", "  ", "*/*", STREAM, "text/*", "TEXT/Event-Stream",
    "application/json, text/event-stream", "text/event-stream;charset=utf-8",
    "text/event-stream; q=0.5", "text/event-stream;q=1.000", "*/*;q=0.001",
    # The most specific range decides: the type itself over text/* and */*.
    "*/*;q=0, text/event-stream", "text/*;q=0, text/event-stream;q=0.2",
    # A range with a quoted comma is one range.
    'application/json;profile="a,b", text/event-stream',
])
def test_a_range_with_a_positive_quality_accepts(header: str | None) -> None:
    assert accepts(header, STREAM)


@pytest.mark.parametrize("header", [
    "text/event-stream;q=0", "text/event-stream; Q=0.000", "text/event-stream ;q=0 ",
    "application/json", "text/html, application/*", "*/*;q=0", "text/*;q=0",
    # The most specific range decides, also when it refuses what a wildcard accepts.
    "*/*, text/event-stream;q=0", "text/*, text/event-stream;q=0",
    # Nothing readable: no type/subtype, or a weight that is no qvalue, is no consent.
    "event-stream", "*/event-stream", "text/event-stream;q=2", "text/event-stream;q=0.5.1",
    "text/event-stream;q=", "text/event-stream;q=yes",
])
def test_q_zero_or_no_matching_range_does_not_accept(header: str) -> None:
    assert not accepts(header, STREAM)

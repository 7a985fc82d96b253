"""The nightly ``analytics-prune`` run says in its logs what it deleted."""

from __future__ import annotations

import time

import pytest

pytestmark = pytest.mark.integration


def test_the_prune_run_logs_how_many_records_it_deleted(prefect_api_url: str) -> None:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import LogFilter, LogFilterFlowRunId

    from ragplate.flows.analytics_prune import analytics_prune

    state = analytics_prune(return_state=True)
    assert state.is_completed()
    deleted = state.result()["deleted"]
    run_id = state.state_details.flow_run_id
    assert run_id is not None
    expected = f"Deleted {deleted} query record(s) older than 30 day(s)"
    messages: list[str] = []
    deadline = time.monotonic() + 30
    while expected not in messages and time.monotonic() < deadline:
        with get_client(sync_client=True) as client:
            logs = client.read_logs(LogFilter(flow_run_id=LogFilterFlowRunId(any_=[run_id])))
        messages = [log.message for log in logs]
        time.sleep(0.2)
    assert expected in messages

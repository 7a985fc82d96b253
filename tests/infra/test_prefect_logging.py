"""ragplate's own warnings inside a flow run reach that run's logs in the Prefect UI
(Prefect's extra loggers), and outside any run they stay on the console, unwarned."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import pytest

from ragplate.infra.home import prefect_logging_environment

pytestmark = pytest.mark.integration

SCRIPT = textwrap.dedent("""
    import logging
    from prefect import flow
    from prefect.runtime import flow_run

    @flow(name="ragplate-logging-probe")
    def probe() -> str:
        logging.getLogger("ragplate.switch").warning("probe warning %s", "inside")
        logging.getLogger("ragplate.switch").info("probe info")
        return str(flow_run.id)

    print(probe(), flush=True)
    logging.getLogger("ragplate.switch").warning("probe warning outside")
""")


def test_the_settings_add_ragplate_to_an_operators_extra_loggers() -> None:
    assert prefect_logging_environment({}) == {
        "PREFECT_LOGGING_EXTRA_LOGGERS": "ragplate",
        "PREFECT_LOGGING_TO_API_WHEN_MISSING_FLOW": "ignore"}
    assert prefect_logging_environment({
        "PREFECT_LOGGING_EXTRA_LOGGERS": "httpx, boto3",
        "PREFECT_LOGGING_TO_API_WHEN_MISSING_FLOW": "warn"}) == {
        "PREFECT_LOGGING_EXTRA_LOGGERS": "httpx,boto3,ragplate"}
    assert prefect_logging_environment({"PREFECT_LOGGING_EXTRA_LOGGERS": "ragplate",
                                        "PREFECT_LOGGING_TO_API_WHEN_MISSING_FLOW": "x"}) == {}


def test_a_ragplate_warning_in_a_flow_run_is_in_its_logs(prefect_api_url: str,
                                                          tmp_path: Path) -> None:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import LogFilter, LogFilterFlowRunId

    env = {k: v for k, v in os.environ.items()
           if not k.startswith("PREFECT_LOGGING_")}
    env.update(prefect_logging_environment({}), PREFECT_API_URL=prefect_api_url,
               PREFECT_HOME=str(tmp_path / "prefect"))
    done = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    run_id = uuid.UUID(done.stdout.strip().splitlines()[-1])

    with get_client(sync_client=True) as client:
        logs = client.read_logs(LogFilter(flow_run_id=LogFilterFlowRunId(any_=[run_id])))
    messages = [log.message for log in logs]
    assert "probe warning inside" in messages
    assert "probe info" not in messages  # the console's level: warnings and worse
    assert "probe warning outside" not in messages
    # Outside any run the warning is on the console, without Prefect's complaint.
    assert "probe warning outside" in done.stderr
    assert "without a flow run id" not in done.stderr

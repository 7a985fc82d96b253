"""The ``evaluate-assistant`` flow and CLI: a run reproduces the committed baseline and
publishes its artifacts on the Prefect server; the CLI runs it end to end and refuses bad
input before starting anything."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ragplate.catalog.settings import PROJECT_ROOT

DATASETS = PROJECT_ROOT / "datasets"
DATASET = DATASETS / "assistant-fixture.json"
BASELINE = DATASETS / "baselines" / "assistant-fixture.json"


@pytest.mark.integration
@pytest.mark.slow
def test_flow_reproduces_the_baseline_and_publishes_artifacts(
    prefect_api_url: str, tmp_path: Path
) -> None:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId

    from ragplate.flows.evaluate_assistant import evaluate_assistant

    output = tmp_path / "assistant.json"
    state = evaluate_assistant(dataset=str(DATASET), output=str(output), return_state=True)

    assert state.is_completed()
    assert output.read_bytes() == BASELINE.read_bytes()
    assert output.with_suffix(".html").read_bytes() == BASELINE.with_suffix(".html").read_bytes()
    with get_client(sync_client=True) as client:
        flow_run = client.read_flow_run(state.state_details.flow_run_id)
        assert client.read_flow(flow_run.flow_id).name == "evaluate-assistant"
        artifacts = client.read_artifacts(artifact_filter=ArtifactFilter(
            flow_run_id=ArtifactFilterFlowRunId(any_=[flow_run.id])))
    by_key = {a.key: a for a in artifacts}
    table = by_key["evaluate-assistant-metrics"]
    rows = json.loads(table.data) if isinstance(table.data, str) else table.data
    assert rows[0]["scope"] == "overall" and rows[0]["refusal_accuracy"] == 1.0
    summary = by_key["evaluate-assistant-report"]
    assert "surface_routing_accuracy" in str(summary.data)
    assert str(output.with_suffix(".html")) in str(summary.data)

    again = evaluate_assistant(dataset=str(DATASET), output=str(output), return_state=True)
    assert again.is_failed()


@pytest.mark.integration
@pytest.mark.slow
def test_the_cli_runs_the_flow_and_prints_the_figures(
    prefect_api_url: str, ragplate_home: Path, tmp_path: Path
) -> None:
    port = prefect_api_url.rsplit(":", 1)[1].split("/", 1)[0]
    environ = {k: v for k, v in os.environ.items()
               if not k.startswith("RAGPLATE_") and k != "PREFECT_API_URL"}
    environ.update(RAGPLATE_HOME=str(ragplate_home), RAGPLATE_PREFECT_PORT=port)
    output = tmp_path / "r.json"

    result = subprocess.run(
        [sys.executable, "-m", "ragplate", "evaluate", "assistant", "--dataset", str(DATASET),
         "--output", str(output), "--json"],
        capture_output=True, text=True, timeout=300, check=False, env=environ)

    assert result.returncode == 0, result.stderr
    printed = json.loads(result.stdout)
    assert printed == json.loads(BASELINE.read_text(encoding="utf-8"))
    assert output.read_bytes() == BASELINE.read_bytes()


def test_cli_refuses_before_starting_anything(tmp_path: Path) -> None:
    existing = tmp_path / "r.json"
    existing.write_text("{}", encoding="utf-8")
    bad = tmp_path / "bad.json"
    data = json.loads(DATASET.read_text(encoding="utf-8"))
    data["cases"][1]["expected_surface"] = "refuse"
    bad.write_text(json.dumps(data), encoding="utf-8")
    for arguments, message in (
        (["--dataset", str(DATASET), "--output", str(existing)], "already exists"),
        (["--dataset", str(tmp_path / "none.json"), "--output", str(tmp_path / "a.json")],
         "none.json: cannot be read"),
        (["--dataset", str(bad), "--output", str(tmp_path / "b.json")],
         f"case '{data['cases'][1]['id']}'"),
        (["--dataset", str(DATASET), "--output", str(tmp_path / "c.json"), "--corpus",
          str(tmp_path / "nowhere")], "not a directory"),
    ):
        result = subprocess.run([sys.executable, "-m", "ragplate", "evaluate", "assistant",
                                 *arguments], capture_output=True, text=True, timeout=120,
                                check=False)
        assert result.returncode == 2, result.stderr
        assert result.stderr.startswith("Error: ") and message in result.stderr, result.stderr

"""The ``evaluate-documentation`` flow and CLI: deterministic runs reproduce the committed
baselines, the run and its artifacts are on the Prefect server, refusals come first."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, cast

import pytest
from typer.testing import CliRunner

from ragplate.catalog.settings import PROJECT_ROOT
from ragplate.cli import app

DATASETS = PROJECT_ROOT / "datasets"


@pytest.mark.integration
@pytest.mark.slow
def test_flow_reproduces_the_baseline_and_publishes_artifacts(
    prefect_api_url: str, tmp_path: Path
) -> None:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId

    from ragplate.flows.evaluate_documentation import evaluate_documentation
    from ragplate.infra.flow_runs import process_tag

    output = tmp_path / "user.json"
    state = evaluate_documentation(index="user", dataset=str(DATASETS /
                                   "documentation-user-fixture.json"), output=str(output),
                                   mode="deterministic", strategy="hybrid", return_state=True)
    assert state.is_completed()
    baseline = DATASETS / "baselines" / "documentation-user-fixture-hybrid.json"
    assert output.read_bytes() == baseline.read_bytes()
    assert output.with_suffix(".html").read_bytes() == baseline.with_suffix(".html").read_bytes()
    flow_run_id = state.state_details.flow_run_id
    with get_client(sync_client=True) as client:
        assert str(client.api_url).rstrip("/") == prefect_api_url
        flow_run = client.read_flow_run(flow_run_id)
        assert client.read_flow(flow_run.flow_id).name == "evaluate-documentation"
        # The run names its process: a later run marks it CRASHED if the process dies.
        assert process_tag() in flow_run.tags
        artifacts = client.read_artifacts(artifact_filter=ArtifactFilter(
            flow_run_id=ArtifactFilterFlowRunId(any_=[flow_run_id])))
    by_key = {a.key: a for a in artifacts}
    table = by_key["evaluate-documentation-metrics"]
    assert table.type == "table"
    rows = json.loads(table.data) if isinstance(table.data, str) else table.data
    assert rows[0]["scope"] == "overall" and rows[0]["source_hit_at_k"] == 1.0
    summary = by_key["evaluate-documentation-report"]
    assert summary.type == "markdown" and "mean_reciprocal_rank" in str(summary.data)
    assert str(output.with_suffix(".html")) in str(summary.data)
    # Nothing of the queries reaches the server either.
    assert "credit note" not in str(summary.data) + str(table.data)

    refused = evaluate_documentation(index="user", dataset=str(DATASETS /
                                     "documentation-user-fixture.json"), output=str(output),
                                     mode="deterministic", return_state=True)
    assert refused.is_failed()
    assert "already exists" in str(refused.message) or "already exists" in str(
        refused.result(raise_on_failure=False))


@pytest.mark.integration
def test_a_dataset_of_no_answer_questions_is_scored_by_its_refusals(
    prefect_api_url: str, tmp_path: Path
) -> None:
    from ragplate.flows.evaluate_documentation import evaluate_documentation

    data = json.loads((DATASETS / "documentation-user-fixture.json").read_text())
    data["cases"] = [case for case in data["cases"] if case["expect_refusal"]]
    assert data["cases"]
    dataset = tmp_path / "no-answer.json"
    dataset.write_text(json.dumps(data), encoding="utf-8")
    output, cases = tmp_path / "r.json", tmp_path / "cases.json"
    state = evaluate_documentation(index="user", dataset=str(dataset), output=str(output),
                                   mode="deterministic", cases_output=str(cases),
                                   return_state=True)
    assert state.is_completed(), state.message
    report = json.loads(output.read_text())
    rows = json.loads(cases.read_text())["cases"]
    assert report["case_count"] == len(rows) == len(data["cases"])
    # Nothing to rank: the figure is the share of questions answered with nothing.
    refused = sum(1 for row in rows if not row["returned"])
    assert 0 < refused < len(rows)  # the fixture has both: the figure can tell them apart
    assert report["metrics"]["refusal_accuracy"] == round(refused / len(rows), 4)
    assert report["metrics"]["mean_reciprocal_rank"] == 0.0


def _expecting_nothing() -> dict[str, Any]:
    """The user fixture with no case expecting labels or an empty answer: valid case by
    case, but nothing to score."""
    data = json.loads((DATASETS / "documentation-user-fixture.json").read_text())
    for case in data["cases"]:
        case.update(expected_source_labels=[], expected_citation_labels=[],
                    expect_refusal=False, expect_authorized_empty=False)
    return cast(dict[str, Any], data)


@pytest.mark.integration
def test_a_dataset_failing_its_suite_is_named_and_nothing_is_written(
    prefect_api_url: str, tmp_path: Path
) -> None:
    from ragplate.flows.evaluate_documentation import evaluate_documentation

    data = _expecting_nothing()
    dataset = tmp_path / "expecting-nothing.json"
    dataset.write_text(json.dumps(data), encoding="utf-8")
    output = tmp_path / "r.json"
    state = evaluate_documentation(index="user", dataset=str(dataset), output=str(output),
                                   mode="deterministic", return_state=True)
    assert state.is_failed()
    message = str(state.result(raise_on_failure=False))
    assert message.startswith(f"{dataset}: expectation suite 'documentation_dataset' failed")
    assert "column='expects_outcome'" in message
    assert not output.exists() and not output.with_suffix(".html").exists()


@pytest.mark.integration
def test_an_error_inside_the_flow_is_one_line_on_the_console(
    prefect_api_url: str, ragplate_home: Path, tmp_path: Path
) -> None:
    data = _expecting_nothing()
    dataset = tmp_path / "expecting-nothing.json"
    dataset.write_text(json.dumps(data), encoding="utf-8")
    port = prefect_api_url.rsplit(":", 1)[1].split("/", 1)[0]
    environ = {k: v for k, v in os.environ.items()
               if not k.startswith("RAGPLATE_") and k != "PREFECT_API_URL"}
    environ.update(RAGPLATE_HOME=str(ragplate_home), RAGPLATE_PREFECT_PORT=port)

    result = subprocess.run(
        [sys.executable, "-m", "ragplate", "evaluate", "documentation", "--index", "user",
         "--dataset", str(dataset), "--output", str(tmp_path / "r.json"),
         "--mode", "deterministic"],
        capture_output=True, text=True, timeout=300, check=False, env=environ)

    assert result.returncode == 2, result.stderr
    # The suite fails inside the flow run: its log line says so, without a traceback,
    # and the command ends on the error itself.
    assert "Traceback" not in result.stderr, result.stderr
    assert result.stderr.strip().splitlines()[-1].startswith(
        f"Error: {dataset}: expectation suite 'documentation_dataset' failed")


def test_cli_refuses_before_starting_anything(tmp_path: Path) -> None:
    existing = tmp_path / "r.json"
    existing.write_text("{}", encoding="utf-8")
    result = subprocess.run(
        [sys.executable, "-m", "ragplate", "evaluate", "documentation", "--index", "user",
         "--dataset", str(DATASETS / "documentation-user-fixture.json"), "--output",
         str(existing), "--mode", "deterministic"],
        capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 2
    assert "already exists" in result.stderr and "--force" in result.stderr
    missing = subprocess.run(
        [sys.executable, "-m", "ragplate", "evaluate", "documentation", "--index", "user",
         "--dataset", "d.json", "--output", str(tmp_path / "no" / "r.json")],
        capture_output=True, text=True, timeout=120, check=False)
    assert missing.returncode == 2 and "does not exist" in missing.stderr
    # The dataset, and the index it was written for, are checked before any flow runs.
    for dataset, index, message in (
        (str(tmp_path / "none.json"), "user", "none.json: cannot be read"),
        (str(DATASETS / "documentation-user-fixture.json"), "developer",
         "--index developer: the dataset's index_profile is 'user'"),
    ):
        wrong = subprocess.run(
            [sys.executable, "-m", "ragplate", "evaluate", "documentation", "--index", index,
             "--dataset", dataset, "--output", str(tmp_path / "w.json")],
            capture_output=True, text=True, timeout=120, check=False)
        assert wrong.returncode == 2, wrong.stderr
        assert wrong.stderr.startswith("Error: ") and message in wrong.stderr, wrong.stderr
        assert "Traceback" not in wrong.stderr and "flow run" not in wrong.stderr


def test_cli_check_validates_datasets_and_reports(tmp_path: Path) -> None:
    runner = CliRunner()
    ok = runner.invoke(app, ["evaluate", "check",
                             str(DATASETS / "documentation-developer-fixture.json")])
    assert ok.exit_code == 0, ok.output
    assert "suite documentation_dataset passed" in ok.output
    report = json.loads((DATASETS / "baselines" /
                         "documentation-developer-fixture-vector.json").read_text())
    report["metrics"]["refusal_accuracy"] = 2.0
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(report), encoding="utf-8")
    failed = runner.invoke(app, ["evaluate", "check", str(bad)])
    assert failed.exit_code != 0
    assert str(failed.exception).startswith(
        f"{bad}: expectation suite 'documentation_report' failed")
    assert "expect_column_values_to_be_between" in str(failed.exception)


@pytest.mark.integration
def test_a_figure_below_its_threshold_exits_1_after_writing_the_report_and_cases(
    prefect_api_url: str, ragplate_home: Path, tmp_path: Path
) -> None:
    port = prefect_api_url.rsplit(":", 1)[1].split("/", 1)[0]
    environ = {k: v for k, v in os.environ.items()
               if not k.startswith("RAGPLATE_") and k != "PREFECT_API_URL"}
    environ.update(RAGPLATE_HOME=str(ragplate_home), RAGPLATE_PREFECT_PORT=port)
    output, cases = tmp_path / "r.json", tmp_path / "cases.json"

    result = subprocess.run(
        [sys.executable, "-m", "ragplate", "evaluate", "documentation", "--index", "developer",
         "--dataset", str(DATASETS / "documentation-developer-fixture.json"),
         "--output", str(output), "--mode", "deterministic", "--cases", str(cases),
         "--min-hit-at-5", "0.5", "--min-mrr", "0.99"],
        capture_output=True, text=True, timeout=300, check=False, env=environ)

    assert result.returncode == 1, result.stderr
    report = json.loads(output.read_text(encoding="utf-8"))
    mrr = report["metrics"]["mean_reciprocal_rank"]
    assert mrr < 0.99
    assert "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines()[-1] == (
        f"Error: MRR {mrr} < --min-mrr 0.99 (report {output})")
    written = json.loads(cases.read_text(encoding="utf-8"))
    assert written["case_count"] == report["case_count"] == len(written["cases"])
    assert written["failing"] == sum(1 for c in written["cases"] if not c["passed"])
    first = written["cases"][0]
    assert set(first) == {"id", "locale", "slices", "expected", "expect_empty", "returned",
                          "first_relevant_rank", "unavailable", "passed"}
    assert "Failing cases" in output.with_suffix(".html").read_text(encoding="utf-8")

    # With --json the report is still printed, with the thresholds missed, then exit 1.
    as_json = subprocess.run(
        [sys.executable, "-m", "ragplate", "evaluate", "documentation", "--index", "developer",
         "--dataset", str(DATASETS / "documentation-developer-fixture.json"),
         "--output", str(output), "--force", "--mode", "deterministic",
         "--min-hit-at-5", "0.5", "--min-mrr", "0.99", "--json"],
        capture_output=True, text=True, timeout=300, check=False, env=environ)
    assert as_json.returncode == 1, as_json.stderr
    printed = json.loads(as_json.stdout)
    assert printed.pop("thresholds_failed") == [
        {"threshold": "--min-mrr", "minimum": 0.99, "value": mrr}]
    assert printed == json.loads(output.read_text(encoding="utf-8"))
    assert as_json.stderr.strip().splitlines()[-1] == (
        f"Error: MRR {mrr} < --min-mrr 0.99 (report {output})")

    # Thresholds it reaches: exit 0 (the report rounds; a threshold is held to the figure,
    # so one a little under the rounded figure).
    passing = subprocess.run(
        [sys.executable, "-m", "ragplate", "evaluate", "documentation", "--index", "developer",
         "--dataset", str(DATASETS / "documentation-developer-fixture.json"),
         "--output", str(output), "--force", "--mode", "deterministic",
         "--min-hit-at-5", "0.5", "--min-mrr", str(round(mrr - 0.001, 3)), "--json"],
        capture_output=True, text=True, timeout=300, check=False, env=environ)
    assert passing.returncode == 0, passing.stderr
    assert json.loads(passing.stdout) == json.loads(output.read_text(encoding="utf-8"))


def test_cli_refuses_cases_of_a_private_dataset_before_running(tmp_path: Path) -> None:
    data = json.loads((DATASETS / "documentation-user-fixture.json").read_text())
    data["data_classification"] = "private"
    outside = tmp_path / "private"
    outside.mkdir()
    dataset = outside / "private.json"
    dataset.write_text(json.dumps(data), encoding="utf-8")
    result = subprocess.run(
        [sys.executable, "-m", "ragplate", "evaluate", "documentation", "--index", "user",
         "--dataset", str(dataset), "--output", str(tmp_path / "r.json"),
         "--mode", "deterministic", "--cases", str(tmp_path / "cases.json")],
        capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 2, result.stderr
    assert "the dataset is private" in result.stderr and "flow run" not in result.stderr
    assert not (tmp_path / "cases.json").exists() and not (tmp_path / "r.json").exists()


@pytest.mark.integration
def test_a_private_datasets_absent_labels_are_counted_not_named_in_the_logs(
    prefect_api_url: str, tmp_path: Path
) -> None:
    """Run logs reach the Prefect server: a private dataset's labels never do."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import LogFilter, LogFilterFlowRunId

    from ragplate.flows.evaluate_documentation import evaluate_documentation

    data = json.loads((DATASETS / "documentation-developer-fixture.json").read_text())
    data["data_classification"] = "private"
    data["cases"][0]["expected_source_labels"].append("secret-customer/PAYROLL_PLAN.md")
    dataset = tmp_path / "private" / "p.json"
    dataset.parent.mkdir()
    dataset.write_text(json.dumps(data), encoding="utf-8")

    state = evaluate_documentation(index="developer", dataset=str(dataset),
                                   output=str(tmp_path / "r.json"), mode="deterministic",
                                   return_state=True)

    assert state.is_completed(), state.message
    warning = "1 expected source label(s) of the dataset are not in the developer index"
    text = ""
    for _ in range(50):  # logs reach the server in batches
        with get_client(sync_client=True) as client:
            logs = client.read_logs(log_filter=LogFilter(flow_run_id=LogFilterFlowRunId(
                any_=[state.state_details.flow_run_id])))
        text = "\n".join(log.message for log in logs)
        if warning in text:
            break
        time.sleep(0.2)
    assert warning in text
    assert "not named (the dataset is private)" in text
    assert "PAYROLL" not in text

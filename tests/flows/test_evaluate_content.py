"""The application-content, strategies and tuning flows on the Prefect server: their runs
and artifacts are visible, their reports are the committed baselines; the CLI refuses
before starting anything, warns when the reranker did not run, and ``tune-retrieval`` refuses
an overfitted or noisy winner on rankings recorded over the tuning fixture."""

from __future__ import annotations

import json
import logging
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
import sqlalchemy as sa
from typer.testing import CliRunner

from ragplate.catalog.settings import PROJECT_ROOT
from ragplate.cli import app

# Imported at collection, outside any CliRunner: loading Prefect's flow machinery sets up
# its console log handler on the stderr of that moment, and a CliRunner's stream is closed
# once the call returns (later flow logs would then fail).
from ragplate.flows.evaluate_content import (
    evaluate_application_content,
    evaluate_retrieval_strategies,
    tune_retrieval,
)
from ragplate.infra.environment import get_settings
from ragplate.tasks.records.fixtures import (
    HOLDOUT_DATASET,
    NOISE_DATASET,
    seed_fixture_corpus,
    seed_tuning_corpus,
)
from tests.testing.server_doubles import RERANK_MODEL, tei_double

DATASETS = PROJECT_ROOT / "datasets"
DATASET = str(DATASETS / "application-content-fixture.json")
BASELINES = DATASETS / "baselines"


@pytest.fixture(scope="module")
def seeded(engine: sa.Engine) -> sa.Engine:
    seed_fixture_corpus(engine)
    return engine


@pytest.fixture
def rerank_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The configured rerank server, a TEI double, for ``Runtime()`` inside the flows."""
    with tei_double(model_id=RERANK_MODEL) as tei:
        monkeypatch.setenv("RAGPLATE_SERVERS__RERANK__URL", tei.url)
        monkeypatch.setenv("RAGPLATE_SERVERS__RERANK__API", "tei")
        get_settings.cache_clear()
        yield tei.url
    monkeypatch.delenv("RAGPLATE_SERVERS__RERANK__URL")
    get_settings.cache_clear()


def artifacts_of(state: Any) -> dict[str, Any]:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId

    flow_run_id = state.state_details.flow_run_id
    with get_client(sync_client=True) as client:
        flow_run = client.read_flow_run(flow_run_id)
        name = client.read_flow(flow_run.flow_id).name
        found = client.read_artifacts(artifact_filter=ArtifactFilter(
            flow_run_id=ArtifactFilterFlowRunId(any_=[flow_run_id])))
    return {"flow": name, **{str(a.key): a for a in found}}


def rows(artifact: Any) -> list[dict[str, Any]]:
    data = artifact.data
    return json.loads(data) if isinstance(data, str) else list(data)


@pytest.mark.integration
@pytest.mark.slow
def test_the_three_flows_publish_their_runs_and_artifacts(
    prefect_api_url: str, seeded: sa.Engine, rerank_server: str, tmp_path: Path
) -> None:
    runs = {
        "application-content": evaluate_application_content(
            source="cms.contents", dataset=DATASET, output=str(tmp_path / "content.json"),
            setup="deterministic", return_state=True),
        "retrieval-strategies": evaluate_retrieval_strategies(
            source="cms.contents", dataset=DATASET, output=str(tmp_path / "strategies.json"),
            setup="deterministic", return_state=True),
        "retrieval-tuning": tune_retrieval(
            source="cms.contents", dataset=DATASET, output=str(tmp_path / "tuning.json"),
            setup="deterministic", return_state=True),
    }
    outputs = {"application-content": "content", "retrieval-strategies": "strategies",
               "retrieval-tuning": "tuning"}
    for kind, state in runs.items():
        assert state.is_completed(), state.message
        written = tmp_path / f"{outputs[kind]}.json"
        baseline = BASELINES / f"{kind}-fixture.json"
        assert written.read_bytes() == baseline.read_bytes(), kind
        assert written.with_suffix(".html").read_bytes() == \
            baseline.with_suffix(".html").read_bytes(), kind
        assert "<svg" in written.with_suffix(".html").read_text(encoding="utf-8")

    content = artifacts_of(runs["application-content"])
    assert content["flow"] == "evaluate-application-content"
    assert rows(content["evaluate-application-content-table"])[0]["scope"] == "overall"
    assert "content.html" in str(content["evaluate-application-content-page"].data)

    strategies = artifacts_of(runs["retrieval-strategies"])
    assert strategies["flow"] == "evaluate-retrieval-strategies"
    table = rows(strategies["evaluate-retrieval-strategies-table"])
    assert [r["strategy"] for r in table] == ["keyword", "vector", "hybrid", "fused",
                                              "reranked"]
    summary = str(strategies["evaluate-retrieval-strategies-report"].data)
    assert f"status ran, ran 49 of 49, model {RERANK_MODEL}" in summary

    tuning = artifacts_of(runs["retrieval-tuning"])
    assert tuning["flow"] == "tune-retrieval"
    assert len(rows(tuning["tune-retrieval-table"])) == 109  # committed + 108 candidates
    block = str(tuning["tune-retrieval-report"].data)
    assert "keep the committed profile" in block and "```python" in block
    assert str(tmp_path / "tuning.html") in block
    page_link = tuning["tune-retrieval-page"]
    assert "file://" in str(page_link.data) and "tuning.html" in str(page_link.data)
    everything = json.dumps([str(a.data) for r in (content, strategies, tuning)
                             for k, a in r.items() if k != "flow"])
    assert "money back" not in everything and "cms.contents:" not in everything

    again = tune_retrieval(source="cms.contents", dataset=DATASET,
                           output=str(tmp_path / "tuning.json"), setup="deterministic",
                           return_state=True)
    assert again.is_failed() and "already exists" in str(again.message)


@pytest.mark.integration
@pytest.mark.slow
def test_cli_strategies_warns_when_the_reranker_did_not_run(
    prefect_api_url: str, seeded: sa.Engine, tmp_path: Path
) -> None:
    output = tmp_path / "strategies.json"
    result = CliRunner().invoke(app, ["evaluate", "strategies", "--source", "cms.contents",
                                      "--dataset", DATASET, "--output", str(output)])

    assert result.exit_code == 0, result.output
    assert "did not run on 49 of 49 cases" in result.output
    report = json.loads(output.read_text(encoding="utf-8"))
    assert report["reranker"] == {"requested": 49, "ran": 0, "status": "not_run",
                                  "model": None}
    # Live: the serving model has no vector of this corpus, so only keyword search ran and
    # the strategies that never ran are left out.
    assert list(report["metrics"]) == ["keyword", "fused", "reranked"]
    assert "warn" in output.with_suffix(".html").read_text(encoding="utf-8")


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ragplate", *args], capture_output=True,
                          text=True, timeout=120, check=False)


def run_logs(flow_run_id: str) -> list[tuple[int, str]]:
    """The level and message of every record of a flow run's log, as the UI shows it."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import LogFilter, LogFilterFlowRunId

    with get_client(sync_client=True) as client:
        logs = client.read_logs(log_filter=LogFilter(
            flow_run_id=LogFilterFlowRunId(any_=[UUID(flow_run_id)])))
    return [(log.level, log.message) for log in logs]


@pytest.mark.integration
@pytest.mark.slow
def test_cli_tune_retrieval_shows_the_block_and_the_warning_once(
    prefect_api_url: str, seeded: sa.Engine, tmp_path: Path
) -> None:
    """The command as an operator runs it: the profile block (stdout) and the reranker's
    warning (stderr) are printed once, not echoed again from the flow run's log, which
    still holds both for the Prefect UI, the warning at WARNING."""
    result = _cli("tune-retrieval", "--dataset", DATASET, "--output",
                  str(tmp_path / "tuning.json"))

    assert result.returncode == 0, result.stderr
    block = "# Retrieval tuning profile measured by tuning.json (ndcg_at_5)."
    warning = "the reranker did not run on 49 of 49 cases (status not_run)"
    printed = result.stdout + result.stderr
    assert printed.count(block) == 1 and block in result.stdout.splitlines()
    assert printed.count(warning) == 1 and f"Warning: {warning}" in result.stderr
    link = re.search(r"/runs/flow-run/([0-9a-f-]{36})", result.stderr)
    assert link is not None, result.stderr
    logs = run_logs(link.group(1))
    assert [level for level, message in logs if warning in message] == [logging.WARNING]
    assert sum(block in message for _, message in logs) == 1


def test_cli_refuses_before_starting_anything(tmp_path: Path) -> None:
    existing = tmp_path / "r.json"
    existing.write_text("{}", encoding="utf-8")
    for command in (["evaluate", "application-content"], ["evaluate", "strategies"],
                    ["tune-retrieval"]):
        taken = _cli(*command, "--dataset", DATASET, "--output", str(existing))
        assert taken.returncode == 2 and "already exists" in taken.stderr, taken.stderr
    missing = _cli("evaluate", "strategies", "--dataset", DATASET, "--output",
                   str(tmp_path / "no" / "r.json"))
    assert missing.returncode == 2 and "does not exist" in missing.stderr
    grid = tmp_path / "grid.json"
    grid.write_text(json.dumps([{"rrf_k": 20}, {"rerank_blend": 0.5}]), encoding="utf-8")
    refused = _cli("tune-retrieval", "--dataset", DATASET, "--output",
                   str(tmp_path / "t.json"), "--grid", str(grid))
    assert refused.returncode == 2
    assert "candidate #1: rerank_blend is a ranking parameter" in refused.stderr
    margin = _cli("tune-retrieval", "--dataset", DATASET, "--output",
                  str(tmp_path / "t.json"), "--noise-margin", "2")
    assert margin.returncode == 2 and "--noise-margin" in margin.stderr
    # A wrong dataset or source is refused in one line, without a flow run.
    for args, message in (
        (["--dataset", str(tmp_path / "none.json")], "none.json: cannot be read"),
        (["--dataset", DATASET, "--source", "cms.bogus"], "unknown entity 'cms.bogus'"),
    ):
        wrong = _cli("evaluate", "application-content", *args, "--output",
                     str(tmp_path / "w.json"))
        assert wrong.returncode == 2, wrong.stderr
        assert wrong.stderr.startswith("Error: ") and message in wrong.stderr, wrong.stderr
        assert "Traceback" not in wrong.stderr and "flow run" not in wrong.stderr


@pytest.fixture
def disagreeing(engine: sa.Engine, settings: Any, embedder: Any) -> Iterator[sa.Engine]:
    """The tuning fixture, embedded with the serving model; the application-content fixture
    is seeded back afterwards, so the module's other tests find it whatever the order."""
    from ragplate.infra.runtime import Runtime

    serving = Runtime(settings).active_profile()
    assert serving.key == embedder.profile.key, "the session must serve the default profile"
    seed_tuning_corpus(engine, serving, lambda _profile: embedder)
    yield engine
    seed_fixture_corpus(engine)


@pytest.mark.integration
@pytest.mark.slow
def test_cli_tune_retrieval_refuses_overfitted_and_noisy_winners(
    prefect_api_url: str, disagreeing: sa.Engine, tmp_path: Path
) -> None:
    """The command end to end on rankings application search records over the tuning
    fixture (keyword search and vector search with the serving model, nothing injected): a
    winner that only fits the selection is refused by the hold-out, a one-case gain by the
    noise margin."""
    runner = CliRunner()
    held_out = runner.invoke(app, ["tune-retrieval", "--dataset", str(HOLDOUT_DATASET),
                                   "--output", str(tmp_path / "overfitted.json")])
    assert held_out.exit_code == 0, held_out.output
    report = json.loads((tmp_path / "overfitted.json").read_text(encoding="utf-8"))
    # Every record has a vector of the serving model, so vector search ran on every case …
    assert report["corpus"]["vectors"] == report["corpus"]["size"] > 0
    # … and the strategies disagree: the candidates do not all score alike.
    assert len({c["metrics"]["ndcg_at_5"] for c in report["candidates"]}) > 1
    assert (report["validation"]["status"], report["noise"]["status"]) == ("rejected",
                                                                           "passed")
    assert report["noise"]["gain"] > report["noise"]["margin"]
    validation = report["validation"]
    assert validation["candidate"] < validation["committed"]
    rejected = validation["rejected_params"]
    assert rejected == report["candidates"][0]["params"]
    assert rejected["vector_weight"] > rejected["keyword_weight"]
    assert report["winner"] is None and report["outcome"] == "holdout_rejected"
    assert "No winner (holdout_rejected): keep the committed profile" in held_out.output
    assert "<svg" in (tmp_path / "overfitted.html").read_text(encoding="utf-8")

    noisy = runner.invoke(app, ["tune-retrieval", "--dataset", str(NOISE_DATASET), "--output",
                                str(tmp_path / "noisy.json"), "--holdout", "0"])
    assert noisy.exit_code == 0, noisy.output
    report = json.loads((tmp_path / "noisy.json").read_text(encoding="utf-8"))
    noise = report["noise"]
    assert noise["status"] == "within_noise"
    assert 0 < noise["gain"] <= noise["margin"] == round(1 / report["case_count"], 4)
    assert report["winner"] is None and report["outcome"] == "within_noise"
    assert report["validation"]["status"] == "disabled"
    assert "NOT validated on held-out cases (validation disabled)" in noisy.output
    # The block is printed unwrapped whatever the terminal width: pasted, every comment
    # line keeps its "#".
    assert ("# NOT validated on held-out cases (validation disabled): read the per-class "
            "table before pasting.") in noisy.output.splitlines()
    assert "No winner (within_noise)" in noisy.output
    page = (tmp_path / "noisy.html").read_text(encoding="utf-8")
    assert page.count("<svg") == 2

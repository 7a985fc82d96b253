"""The deployments of ``prefect.yaml`` proven end to end, as an operator runs them.

On the session's local Prefect server (a free port, the session's RAGPLATE_HOME and
PREFECT_HOME): ``ragplate deploy`` registers every deployment, ``ragplate worker`` runs a
worker in a process of its own, ``nightly-reindex`` is triggered through the Prefect API and
completes in that worker's flow run, the session's index then holds the tiny corpus the
worker's environment names, and the cron schedules are on the server. Every process the
test started (the worker and what it started) is stopped, and checked gone.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, cast

import psutil
import pytest

from ragplate.catalog.settings import Settings
from ragplate.infra.runtime import Runtime
from tests.testing.corpus import write_corpus

if TYPE_CHECKING:
    from prefect.client.schemas.objects import FlowRun

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
#: The label prefix of the tiny corpus: what the nightly run indexes, removed afterwards.
PREFIX = "deploy-test"
FILES = {
    "workers.md": "# Workers\n\nA worker polls its work pool and starts each flow run in a "
                  "process of its own.\n",
    "schedules/nightly.md": "# Nightly reindex\n\nThe nightly reindex runs at two in the "
                            "morning, UTC, and embeds only what changed.\n",
}
#: The cron schedules the issue asks for, as ``prefect.yaml`` declares them.
SCHEDULED = {"nightly-reindex": "0 2 * * *", "daily-analytics-prune": "30 3 * * *"}
RUN_TIMEOUT = 300.0
#: ``ragplate worker`` stops on its first SIGTERM, within its 30 s for flow runs.
GRACEFUL_STOP = 45.0


def _environment(corpus: Path) -> dict[str, str]:
    """The session's environment (its RAGPLATE_HOME, RAGPLATE_PREFECT_PORT and
    PREFECT_HOME) with the tiny corpus as the only documentation root."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PREFECT_API_URL", "RAGPLATE_DOCS_PATH", "RAGPLATE_CHECKOUT")}
    env["RAGPLATE_DOCS_ROOTS"] = json.dumps({PREFIX: str(corpus)})
    return env


def _ragplate(*args: str, env: dict[str, str], timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ragplate", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout, check=False)


class Worker:
    """``ragplate worker`` in a session of its own, and every process seen under it."""

    def __init__(self, env: dict[str, str], log: IO[bytes]) -> None:
        self.process = subprocess.Popen([sys.executable, "-m", "ragplate", "worker"], cwd=ROOT,
                                        env=env, stdin=subprocess.DEVNULL, stdout=log,
                                        stderr=subprocess.STDOUT, start_new_session=True)
        self.seen: dict[int, psutil.Process] = {}
        self.note()

    def note(self) -> None:
        """Remember the worker and its descendants now: a flow run's process runs in a
        session of its own, so a signal to the worker's group does not reach it."""
        try:
            root = psutil.Process(self.process.pid)
            for process in [root, *root.children(recursive=True)]:
                self.seen.setdefault(process.pid, process)
        except psutil.NoSuchProcess:
            pass

    def stop(self) -> list[str]:
        """One SIGTERM, then SIGKILL for anything left; returns what had to be killed, and
        what is still alive after all that, as text."""
        self.note()
        forced: list[str] = []
        if self.process.poll() is None:
            # One SIGTERM: ragplate worker gives running flow runs 30 s, then kills.
            self.process.send_signal(signal.SIGTERM)
            self.process.wait(timeout=GRACEFUL_STOP)
        leftovers = [p for p in self.seen.values() if _alive(p)]
        for process in leftovers:
            forced.append(f"{process.pid} {' '.join(_cmdline(process))}")
            process.kill()
        psutil.wait_procs(leftovers, timeout=10)
        forced += [f"still alive: {p.pid}" for p in self.seen.values() if _alive(p)]
        return forced


def _alive(process: psutil.Process) -> bool:
    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _cmdline(process: psutil.Process) -> list[str]:
    try:
        return process.cmdline()
    except psutil.Error:
        return []


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    return write_corpus(tmp_path / "corpus", FILES)


@pytest.fixture
def indexed_labels(prefect_api_url: str, settings: Settings) -> Iterator[list[str]]:
    """The labels the run is to index; whatever it indexed under :data:`PREFIX` is
    removed afterwards (both indexes), so the session's other tests see their own."""
    labels = [f"{PREFIX}/{name}" for name in FILES]
    yield labels
    runtime = Runtime(settings)
    for index in ("developer", "user"):
        store = runtime.store(index, runtime.active_profile())
        store.delete_sources([s for s in store.sources() if s.startswith(f"{PREFIX}/")])


def test_deploy_then_a_worker_runs_the_nightly_reindex_on_the_session_database(
    prefect_api_url: str, settings: Settings, corpus: Path, indexed_labels: list[str],
    tmp_path: Path,
) -> None:
    from prefect.client.orchestration import get_client
    from prefect.deployments import run_deployment

    env = _environment(corpus)
    started = time.monotonic()
    deployed = _ragplate("deploy", "--json", env=env, timeout=600)
    assert deployed.returncode == 0, deployed.stderr + deployed.stdout
    result = json.loads(deployed.stdout)
    deploy_seconds = time.monotonic() - started

    declared = _declared_names()
    assert [d["name"] for d in result["deployments"]] == declared
    assert result["api_url"] == prefect_api_url
    assert result["checkout"] == str(ROOT)
    rows = {d["name"]: d for d in result["deployments"]}
    assert rows["nightly-reindex"]["flow"] == "index-rag-docs"
    assert rows["daily-analytics-prune"]["flow"] == "analytics-prune"
    assert rows["embeddings-switch"]["work_queue"] == "embeddings-switch"

    with get_client(sync_client=True) as client:
        pool = client.read_work_pool("ragplate")
        assert pool.type == "process"
        held = {name: client.read_deployment(rows[name]["id"]) for name in declared}
        for name, cron in SCHEDULED.items():
            schedules = [(s.schedule.cron, s.schedule.timezone, s.active)  # type: ignore[union-attr]
                         for s in held[name].schedules]
            assert schedules == [(cron, "UTC", True)], name
        # ragplate deploy stores the checkout in the pull step (RAGPLATE_CHECKOUT, default
        # the project root): the flow run moves there before loading its flow.
        assert held["nightly-reindex"].pull_steps == [
            {"prefect.deployments.steps.set_working_directory": {"directory": str(ROOT)}}]
        # Off for the rest of the test (which also deletes their future runs): a scheduled
        # run falling due while the worker polls (the 02:00 reindex would contend for the
        # index lock) must not race the run triggered below.
        for deployment in held.values():
            for schedule in deployment.schedules:
                if schedule.active:
                    client.update_deployment_schedule(deployment.id, schedule.id, active=False)

    log_path = tmp_path / "worker.log"
    with open(log_path, "wb") as log:
        worker = Worker(env, log)
        try:
            triggered = time.monotonic()
            # Called from sync code, Prefect's async_dispatch returns the flow run itself.
            run = cast("FlowRun", run_deployment("index-rag-docs/nightly-reindex", timeout=0))
            state = _wait(run.id, worker)
            run_seconds = time.monotonic() - triggered
            worker_log = log_path.read_text(errors="replace")
            assert state.is_completed(), f"{state!r}\n{worker_log[-4000:]}"
            with get_client(sync_client=True) as client:
                finished = client.read_flow_run(run.id)
                artifacts = {a.key for a in _artifacts(client, run.id)}
        finally:
            leftovers = worker.stop()

    assert leftovers == [], f"processes the worker left behind: {leftovers}"
    # The run went through the worker (not this process) and its pull step.
    assert "set_working_directory" in worker_log
    assert finished.deployment_id is not None and str(finished.deployment_id) == \
        rows["nightly-reindex"]["id"]
    assert finished.parameters == {"profile": "all", "full": False}
    assert {"index-rag-docs-summary", "index-rag-docs-report"} <= artifacts

    # The worker's flow run wrote into the session's database: its developer index.
    runtime = Runtime(settings)
    store = runtime.store("developer", runtime.active_profile())
    sources = store.sources()
    assert sorted(s for s in sources if s.startswith(f"{PREFIX}/")) == sorted(indexed_labels)
    print(f"\nragplate deploy: {deploy_seconds:.1f} s; nightly-reindex triggered to completed "
          f"(worker start included): {run_seconds:.1f} s")


def _declared_names() -> list[str]:
    import yaml

    config = yaml.safe_load((ROOT / "prefect.yaml").read_text())
    return [d["name"] for d in config["deployments"]]


def _wait(flow_run_id: Any, worker: Worker) -> Any:
    """The flow run's final state, polled every second for :data:`RUN_TIMEOUT` seconds
    (noting the worker's processes meanwhile); fails the test when it does not end."""
    from prefect.client.orchestration import get_client

    deadline, state = time.monotonic() + RUN_TIMEOUT, None
    with get_client(sync_client=True) as client:
        while time.monotonic() < deadline:
            worker.note()
            state = client.read_flow_run(flow_run_id).state
            if state is not None and state.is_final():
                return state
            assert worker.process.poll() is None, "the worker exited before the run ended"
            time.sleep(1)
    pytest.fail(f"nightly-reindex did not finish in {RUN_TIMEOUT:.0f} s (last: {state!r})")


def _artifacts(client: Any, flow_run_id: Any) -> list[Any]:
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId

    return list(client.read_artifacts(
        artifact_filter=ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=[flow_run_id]))))

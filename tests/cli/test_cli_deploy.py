"""``ragplate deploy`` and ``ragplate worker`` without a server: what they read of
``prefect.yaml``, the environment they give Prefect, and the refusals that come before any
service starts. The whole path against a real server is ``tests/flows/test_deployments.py``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ragplate.catalog.errors import ConfigurationError
from ragplate.catalog.settings import Settings
from ragplate.infra import prefect_deployments as pd

ROOT = Path(__file__).resolve().parents[2]


def ragplate(home: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """``python -m ragplate ARGS`` with a private home and no Prefect server configured."""
    environ = {k: v for k, v in os.environ.items()
               if not k.startswith("RAGPLATE_") and k != "PREFECT_API_URL"}
    environ.update(RAGPLATE_HOME=str(home), **env)
    return subprocess.run([sys.executable, "-m", "ragplate", *args], env=environ, cwd=ROOT,
                          capture_output=True, text=True, timeout=120, check=False)


def test_the_checkout_declares_every_deployment_on_the_ragplate_pool() -> None:
    declared = {d.name: d for d in pd.declared_deployments(ROOT)}

    assert {"nightly-reindex", "daily-analytics-prune", "embeddings-switch"} <= set(declared)
    assert {d.work_pool for d in declared.values()} == {pd.POOL}
    prune = declared["daily-analytics-prune"]
    assert prune.entrypoint == "ragplate/flows/analytics_prune.py:analytics_prune"
    assert prune.work_queue == "default"
    assert prune.schedules == [{"cron": "30 3 * * *", "timezone": "UTC", "active": True}]


def test_the_project_root_is_the_checkout_variable_else_this_checkout(tmp_path: Path) -> None:
    assert pd.project_root(None, ROOT, tmp_path) == ROOT
    assert pd.project_root(str(ROOT), tmp_path, tmp_path) == ROOT
    with pytest.raises(ConfigurationError, match="RAGPLATE_CHECKOUT"):
        pd.project_root(str(tmp_path), ROOT, ROOT)
    with pytest.raises(ConfigurationError, match=r"no prefect\.yaml"):
        pd.project_root(None, tmp_path, tmp_path)


@pytest.mark.parametrize("value", ["", " "])
def test_an_empty_checkout_variable_is_refused_not_this_checkout(tmp_path: Path,
                                                                 value: str) -> None:
    with pytest.raises(ConfigurationError) as error:
        pd.project_root(value, ROOT, tmp_path)

    assert str(error.value) == ("RAGPLATE_CHECKOUT is set but empty: unset it to use the "
                                "default, or give a value")


def test_prefect_gets_the_api_the_home_and_the_checkout(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path / "home")
    environ = {"PATH": "/usr/bin", "PREFECT_API_URL": "http://elsewhere/api"}

    env = pd.prefect_environment(settings, "http://127.0.0.1:4321/api", ROOT, environ)

    assert env["PATH"] == "/usr/bin"
    assert env["PREFECT_API_URL"] == "http://127.0.0.1:4321/api"
    assert env["RAGPLATE_HOME"] == str(settings.home)
    assert env["RAGPLATE_CHECKOUT"] == str(ROOT)
    assert env["PREFECT_HOME"] == str(settings.home / "prefect")
    # A flow run's ragplate warnings go to its logs in the UI.
    assert env["PREFECT_LOGGING_EXTRA_LOGGERS"] == "ragplate"
    # An operator's own PREFECT_HOME is kept.
    mine = pd.prefect_environment(settings, "http://x/api", ROOT, {"PREFECT_HOME": "/srv/p"})
    assert mine["PREFECT_HOME"] == "/srv/p"
    # Prefect's client telemetry is off unless the operator said otherwise.
    assert env["DO_NOT_TRACK"] == "1"
    assert pd.prefect_environment(settings, "http://x/api", ROOT,
                                  {"DO_NOT_TRACK": "0"})["DO_NOT_TRACK"] == "0"


def test_the_worker_is_prefects_process_worker_for_the_pool() -> None:
    assert pd.worker_command()[1:] == ["-m", "prefect", "worker", "start", "--pool",
                                       "ragplate", "--type", "process"]


def test_a_missing_entrypoint_is_refused_before_any_service_starts(tmp_path: Path) -> None:
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    (checkout / "prefect.yaml").write_text(
        "deployments:\n"
        "  - name: nightly-reindex\n"
        "    entrypoint: ragplate/flows/index_docs.py:index_rag_docs\n"
        "    work_pool: {name: ragplate}\n"
        "  - name: no-pool\n"
        "    entrypoint: flows.py:f\n"
        "  - name: no-function\n"
        "    entrypoint: flows.py:nope\n"
        "    work_pool: {name: ragplate}\n")
    (checkout / "flows.py").write_text("import prefect\n\n\ndef f():\n    pass\n")
    home = tmp_path / "home"

    result = ragplate(home, "deploy", RAGPLATE_CHECKOUT=str(checkout))

    assert result.returncode == 2, result.stderr
    error = " ".join(result.stderr.split())
    assert "nightly-reindex: entrypoint file ragplate/flows/index_docs.py does not exist" in error
    assert "no-pool: no work_pool.name" in error
    # A function the file does not define is found here, not by Prefect after it started.
    assert "no-function: entrypoint file flows.py defines no 'nope'" in error
    assert "nothing was registered" in error
    assert not (home / "pgdata").exists() and not (home / "run").exists()


@pytest.mark.parametrize("command", ["deploy", "worker"])
def test_a_checkout_without_prefect_yaml_is_refused(tmp_path: Path, command: str) -> None:
    result = ragplate(tmp_path / "home", command, RAGPLATE_CHECKOUT=str(tmp_path))

    assert result.returncode == 2, result.stderr
    assert "RAGPLATE_CHECKOUT" in result.stderr and "no prefect.yaml" in result.stderr

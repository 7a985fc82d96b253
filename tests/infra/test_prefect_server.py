"""The local Prefect server's addresses (:mod:`ragplate.infra.prefect_server`), and where
Prefect writes (:mod:`ragplate.infra.home`): its home and result storage under
RAGPLATE_HOME unless the operator chose them, for a failed flow run too."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from ragplate.infra import home, prefect_server
from tests.testing.corpus import write_corpus


@pytest.fixture
def no_prefect_paths(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """No Prefect home or storage of the session (tests/conftest.py sets them) or of
    an earlier call in this process."""
    for name in (*home.HOME_VARIABLES, *home.STORAGE_VARIABLES):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(home, "_chosen", {})
    return monkeypatch


def test_the_ui_is_the_api_url_without_api(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PREFECT_UI_URL", raising=False)

    assert prefect_server.ui_url("http://127.0.0.1:4201/api") == "http://127.0.0.1:4201"
    assert prefect_server.ui_url("https://prefect.example/api/") == "https://prefect.example"
    assert prefect_server.ui_url(
        "https://api.prefect.cloud/api/accounts/a/workspaces/w") is None  # not told
    monkeypatch.setenv("PREFECT_UI_URL", "https://ui.example")
    assert prefect_server.ui_url("http://127.0.0.1:4201/api") == "https://ui.example"


def test_prefect_writes_under_ragplate_home_by_default(
    no_prefect_paths: pytest.MonkeyPatch, tmp_path: Path,
) -> None:
    assert home.prefect_home_environment(tmp_path) == {
        "PREFECT_HOME": str(tmp_path / "prefect"),
        "PREFECT_RESULTS_LOCAL_STORAGE_PATH": str(tmp_path / "prefect" / "storage"),
    }


def test_the_operators_prefect_home_or_storage_is_kept(
    no_prefect_paths: pytest.MonkeyPatch, tmp_path: Path,
) -> None:
    assert home.prefect_home_environment(tmp_path, {"PREFECT_HOME": "/srv/prefect"}) == {}
    assert home.prefect_home_environment(
        tmp_path, {"PREFECT_LOCAL_STORAGE_PATH": "/srv/results"}) == {
        "PREFECT_HOME": str(tmp_path / "prefect")}


def test_a_value_set_for_an_earlier_home_is_not_taken_for_the_operators(
    no_prefect_paths: pytest.MonkeyPatch, tmp_path: Path,
) -> None:
    home.use_home_for_prefect(tmp_path / "first")

    chosen = home.use_home_for_prefect(tmp_path / "second")

    assert chosen["PREFECT_HOME"] == os.environ["PREFECT_HOME"] == str(
        tmp_path / "second" / "prefect")


@pytest.mark.integration
@pytest.mark.slow
def test_a_failed_flow_run_writes_nothing_under_the_users_home(
    ragplate_home: Path, prefect_api_url: str, tmp_path: Path,
) -> None:
    user_home = Path(tempfile.mkdtemp(prefix="ragplate-user-home-"))
    bad = write_corpus(tmp_path / "bad", {"a.md": "---\naudience: nobody\n---\n# A\n\nText.\n"})
    port = prefect_api_url.rstrip("/").removesuffix("/api").rsplit(":", 1)[1]
    environ = {k: v for k, v in os.environ.items()
               if not k.startswith(("RAGPLATE_", "PREFECT_"))}
    environ.update(HOME=str(user_home), RAGPLATE_HOME=str(ragplate_home),
                   RAGPLATE_PREFECT_PORT=port)
    storage = ragplate_home / "prefect" / "storage"
    before = set(storage.iterdir()) if storage.is_dir() else set()
    try:
        result = subprocess.run([sys.executable, "-m", "ragplate", "index-docs", "--path",
                                 str(bad)], env=environ, capture_output=True, text=True,
                                timeout=300, check=False)

        assert result.returncode == 2, result.stderr
        assert "unknown audience 'nobody'" in result.stderr
        assert not (user_home / ".prefect").exists()
        assert list(user_home.iterdir()) == []
        # What the failed run wrote (its exception, as a result) is under RAGPLATE_HOME.
        assert set(storage.iterdir()) - before
    finally:
        import shutil

        shutil.rmtree(user_home, ignore_errors=True)


@pytest.mark.integration
def test_command_line_flow_runs_send_no_heartbeat_unless_the_operator_sets_one(
    prefect_api_url: str,
) -> None:
    from prefect import settings as ps

    from ragplate.infra.prefect_server import run_settings

    assert ps.PREFECT_FLOWS_HEARTBEAT_FREQUENCY.value() is None  # inside prefect_api
    chosen: dict[str, str] = {}
    assert run_settings(prefect_api_url, chosen, {})[ps.PREFECT_FLOWS_HEARTBEAT_FREQUENCY] is None
    for variable in ("PREFECT_FLOWS_HEARTBEAT_FREQUENCY", "PREFECT_RUNNER_HEARTBEAT_FREQUENCY"):
        updates = run_settings(prefect_api_url, chosen, {variable: "60"})
        assert ps.PREFECT_FLOWS_HEARTBEAT_FREQUENCY not in updates  # Prefect reads it

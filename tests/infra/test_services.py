"""The embedded services lifecycle: PostgreSQL and a local Prefect server, for real.

Every test builds its own ``Settings`` (own RAGPLATE_HOME, own free port) instead of using
the session fixtures, so a leftover server here can never collide with another test's.
"""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from ragplate.catalog.errors import ServiceError
from ragplate.catalog.settings import Settings
from ragplate.infra import postgres, prefect_server, services
from ragplate.infra.services import ServiceState

pytestmark = pytest.mark.integration


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _settings(home: Path, port: int | None = None) -> Settings:
    # database_url=None explicitly: an RAGPLATE_DATABASE_URL in the environment must not leak in.
    return Settings(home=home, prefect_port=port or _free_port(), database_url=None)


def _by_name(states: list[ServiceState]) -> dict[str, ServiceState]:
    return {state.name: state for state in states}


@pytest.fixture(autouse=True)
def _no_external_prefect(monkeypatch: pytest.MonkeyPatch) -> None:
    # A PREFECT_API_URL of the developer's shell would make every "local" test external.
    monkeypatch.delenv("PREFECT_API_URL", raising=False)


@pytest.fixture(scope="module")
def svc_settings() -> Iterator[Settings]:
    """Settings of a RAGPLATE_HOME private to this module; its services are always stopped."""
    # Not under pytest's basetemp: any pytest run starting meanwhile resets /tmp/pytest-of-*
    # to 0700, and then PostgreSQL's unprivileged user can no longer reach its data to stop.
    home = Path(tempfile.mkdtemp(prefix="ragplate-services-"))
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("PREFECT_API_URL", raising=False)
        settings = _settings(home)
        try:
            yield settings
        finally:
            services.down(settings)
            shutil.rmtree(home, ignore_errors=True)


@pytest.fixture
def started(svc_settings: Settings) -> dict[str, ServiceState]:
    """Both services up (started once, reused by later tests unless one stopped them)."""
    return _by_name(services.up(svc_settings))


def test_status_before_up_shows_both_stopped(tmp_path: Path) -> None:
    states = _by_name(services.status(_settings(tmp_path)))

    assert [states["postgresql"].running, states["prefect"].running] == [False, False]
    assert states["postgresql"].pid is None and states["prefect"].pid is None
    assert postgres.running(tmp_path) is None  # status started nothing


@pytest.mark.slow
def test_up_starts_postgres_and_prefect(
    svc_settings: Settings, started: dict[str, ServiceState]
) -> None:
    pg, prefect = started["postgresql"], started["prefect"]

    assert pg.running and pg.pid is not None
    assert pg.url is not None and pg.url.startswith("postgresql+psycopg://postgres@/ragplate")
    assert prefect.running and prefect.pid is not None
    # The UI is what a browser opens; the API (a 404 page in a browser) is labelled apart.
    assert prefect.url == f"http://127.0.0.1:{svc_settings.prefect_port}"
    assert prefect.api_url == f"http://127.0.0.1:{svc_settings.prefect_port}/api"
    assert prefect_server.healthy(prefect.api_url)
    info = prefect_server.status(svc_settings)
    assert info["running"] and info["healthy"] and info["pid"] == prefect.pid


@pytest.mark.slow
def test_second_up_reuses_the_running_services(
    svc_settings: Settings, started: dict[str, ServiceState]
) -> None:
    again = _by_name(services.up(svc_settings))

    assert again["postgresql"].pid == started["postgresql"].pid
    assert again["prefect"].pid == started["prefect"].pid
    assert again["prefect"].detail == "running"


@pytest.mark.slow
def test_status_after_the_prefect_port_changed_says_up_replaces_the_server(
    svc_settings: Settings, started: dict[str, ServiceState]
) -> None:
    moved = svc_settings.model_copy(update={"prefect_port": _free_port()})

    prefect = _by_name(services.status(moved))["prefect"]

    assert prefect.running and prefect.pid == started["prefect"].pid
    assert prefect.detail == ("listening on another port (RAGPLATE_PREFECT_PORT changed): "
                              "`ragplate up` replaces it")


@pytest.mark.slow
def test_flow_run_is_visible_on_the_local_server(
    svc_settings: Settings, started: dict[str, ServiceState]
) -> None:
    from prefect import flow, get_client
    from prefect.client.schemas.filters import FlowFilter, FlowFilterName

    name = f"ragplate-smoke-{uuid.uuid4().hex[:8]}"

    @flow(name=name)
    def smoke(value: int) -> int:
        return value + 1

    with prefect_server.prefect_api(svc_settings) as url:
        assert url == started["prefect"].api_url
        assert smoke(1) == 2
        with get_client(sync_client=True) as client:
            assert str(client.api_url).rstrip("/") == url
            runs = client.read_flow_runs(flow_filter=FlowFilter(name=FlowFilterName(any_=[name])))

    assert len(runs) == 1
    assert runs[0].state is not None and runs[0].state.is_completed()


@pytest.mark.slow
def test_external_api_url_is_used_without_spawning(
    tmp_path: Path, started: dict[str, ServiceState], monkeypatch: pytest.MonkeyPatch
) -> None:
    running_url = started["prefect"].api_url
    assert running_url is not None
    monkeypatch.setenv("PREFECT_API_URL", running_url)
    other = _settings(tmp_path)

    assert prefect_server.start(other) == running_url
    assert not (other.run_dir / prefect_server.PID_FILE).exists()
    assert postgres.running(tmp_path) is None
    state = _by_name(services.status(other))["prefect"]
    assert state.running and state.detail == "external" and state.pid is None
    assert _by_name(services.down(other))["prefect"].running  # external: never stopped


def test_status_names_a_program_holding_the_port_as_someone_elses(tmp_path: Path) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = int(listener.getsockname()[1])

        prefect = _by_name(services.status(_settings(tmp_path, port)))["prefect"]

    assert not prefect.running and prefect.pid is None
    assert prefect.url is None and prefect.api_url is None  # its address is not ours
    assert prefect.detail == (f"stopped; port {port} is held by another program "
                              f"({Path(psutil.Process().cmdline()[0]).name}, pid {os.getpid()}): "
                              "`ragplate up` starts this home's server on a free port")
    assert postgres.running(tmp_path) is None  # status started nothing


@pytest.mark.slow
def test_another_homes_server_on_the_port_is_named_and_up_takes_a_free_port(
    svc_settings: Settings, started: dict[str, ServiceState]
) -> None:
    # A second home configured for the port the first home's server listens on.
    home = Path(tempfile.mkdtemp(prefix="ragplate-services-other-"))
    other = _settings(home, svc_settings.prefect_port)
    theirs = f"the Prefect server of another RAGPLATE_HOME ({svc_settings.home}, " \
             f"pid {started['prefect'].pid})"
    try:
        before = _by_name(services.status(other))["prefect"]
        assert not before.running and before.pid is None
        assert f"port {svc_settings.prefect_port} is held by {theirs}" in before.detail

        after = _by_name(services.up(other))["prefect"]

        port = int(str(after.api_url).rsplit(":", 1)[1].removesuffix("/api"))
        assert port != svc_settings.prefect_port
        assert after.running and after.pid not in (None, started["prefect"].pid)
        assert after.detail == (f"started on port {port}: port {svc_settings.prefect_port} "
                                f"is held by {theirs}")
        assert after.url == f"http://127.0.0.1:{port}"
        # Every process of the second home finds its own server, on its port.
        assert prefect_server.local_api_url(other) == f"http://127.0.0.1:{port}/api"
        assert prefect_server.start(other) == after.api_url
        again = _by_name(services.status(other))["prefect"]
        assert again.pid == after.pid and again.detail.startswith(f"running on port {port}")
        # The first home's server was neither used nor replaced.
        first = _by_name(services.status(svc_settings))["prefect"]
        assert first.pid == started["prefect"].pid and first.detail == "running"
    finally:
        services.down(other)
        shutil.rmtree(home, ignore_errors=True)


@pytest.mark.slow
def test_a_server_whose_pid_file_was_emptied_is_still_this_homes(
    svc_settings: Settings, started: dict[str, ServiceState]
) -> None:
    pid_file = svc_settings.run_dir / prefect_server.PID_FILE
    pid_file.write_text("")

    prefect = _by_name(services.status(svc_settings))["prefect"]

    # Not "held by the Prefect server of another RAGPLATE_HOME": it is this home's.
    assert prefect.running and prefect.pid == started["prefect"].pid
    assert prefect.detail == "running"
    assert prefect_server.running_api_url(svc_settings) == started["prefect"].api_url
    assert pid_file.read_text() == ""  # status writes nothing; `up` records it again
    assert _by_name(services.up(svc_settings))["prefect"].pid == started["prefect"].pid
    assert pid_file.read_text().split()[0] == str(started["prefect"].pid)
    pid_file.write_text("")
    assert prefect_server.stop(svc_settings)  # `down` finds it too
    assert not psutil.pid_exists(started["prefect"].pid) or psutil.Process(
        started["prefect"].pid).status() == psutil.STATUS_ZOMBIE


@pytest.mark.slow
def test_status_says_when_prefect_runs_without_its_database(
    svc_settings: Settings, started: dict[str, ServiceState]
) -> None:
    assert postgres.stop(svc_settings.home)
    try:
        states = _by_name(services.status(svc_settings))

        assert not states["postgresql"].running
        assert states["prefect"].running and states["prefect"].pid == started["prefect"].pid
        assert states["prefect"].detail == ("running; its database (PostgreSQL) is down: "
                                            "flow runs fail until `ragplate up`")
    finally:
        services.up(svc_settings)


@pytest.mark.slow
def test_down_stops_both_and_is_idempotent(
    svc_settings: Settings, started: dict[str, ServiceState]
) -> None:
    prefect_pid = started["prefect"].pid
    assert prefect_pid is not None

    # An index-docs run or a switch writing to the database: refused, nothing stopped.
    import sqlalchemy as sa

    from ragplate.catalog.errors import ServiceError
    from ragplate.infra import locks, postgres

    server = postgres.running(svc_settings.home)
    assert server is not None
    engine = sa.create_engine(server.url(), poolclass=sa.NullPool)
    try:
        with locks.index_lock(engine) as held, locks.RunLock(engine) as run_lock:
            assert held and run_lock.acquire()
            with pytest.raises(ServiceError, match="an index-docs run and an embedding "
                               "switch are writing to this home's database"):
                services.down(svc_settings)
            states = _by_name(services.status(svc_settings))
            assert states["postgresql"].running and states["prefect"].running
    finally:
        engine.dispose()

    first = _by_name(services.down(svc_settings))
    assert first["prefect"].detail == "stopped" and first["postgresql"].detail == "stopped"
    states = _by_name(services.status(svc_settings))
    assert not states["postgresql"].running and not states["prefect"].running
    assert not prefect_server.healthy(f"http://127.0.0.1:{svc_settings.prefect_port}/api")
    assert not (svc_settings.run_dir / prefect_server.PID_FILE).exists()
    with pytest.raises(ProcessLookupError):
        os.kill(prefect_pid, 0)

    second = _by_name(services.down(svc_settings))
    assert second["prefect"].detail == "not running"
    assert second["postgresql"].detail == "not running"


def test_an_external_api_url_that_cannot_be_reached_is_one_service_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as closed:
        closed.bind(("127.0.0.1", 0))
        port = int(closed.getsockname()[1])  # bound, never listening: connections refused
        monkeypatch.setenv("PREFECT_API_URL", f"http://127.0.0.1:{port}/api")

        settings = _settings(tmp_path)
        with pytest.raises(ServiceError) as error:
            prefect_server.start(settings)

    assert f"the Prefect API at http://127.0.0.1:{port}/api (PREFECT_API_URL) cannot be " \
           "reached" in str(error.value)
    assert error.value.exit_code == 3
    assert not (settings.run_dir / prefect_server.PID_FILE).exists()  # nothing spawned


def test_a_stale_pid_file_naming_another_prefect_process_is_not_our_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import subprocess

    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    settings = _settings(tmp_path)
    # A process whose command line looks like a Prefect server, but not this home's.
    other = subprocess.Popen(["bash", "-c", "exec -a 'python -m prefect server start' sleep 60"],
                             env={"PATH": os.environ["PATH"]})
    try:
        settings.run_dir.mkdir(parents=True)
        (settings.run_dir / prefect_server.PID_FILE).write_text(str(other.pid))

        assert prefect_server.status(settings)["running"] is False
        assert prefect_server.stop(settings) is False
        assert other.poll() is None  # left alone
    finally:
        other.kill()
        other.wait()

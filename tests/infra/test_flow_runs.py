"""Flow runs a dead process left ``RUNNING``, for flows without a lock: each run names its
process in a tag, and a later run marks those whose process is gone ``CRASHED``."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest

from ragplate.infra.flow_runs import (
    GONE_REASON,
    crash_runs_of_gone_processes,
    process_gone,
    process_tag,
)


def _killed_process_tag() -> str:
    """The tag of a process that was killed (``kill -9``) and is gone."""
    child = subprocess.Popen(["sleep", "60"])
    tag = process_tag(child.pid)
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    return tag


def test_a_process_is_gone_when_its_pid_is_free_or_started_at_another_time() -> None:
    assert not process_gone(process_tag())
    assert process_gone(_killed_process_tag())
    # The pid is in use, but by a process started at another time than the run's.
    mine = process_tag()
    assert process_gone(mine.rsplit(":", 1)[0] + ":1")
    # Another machine's process cannot be told from here; a tag that is not one is kept.
    assert not process_gone("process:another-machine:0123456789ab.4026531836:1:1")
    # Nor another container's with this host name (its own pids): another pid namespace.
    host, machine, _, _ = mine.removeprefix("process:").rsplit(":", 3)
    assert machine and not process_gone(f"process:{host}:{machine}0:1:1")
    assert not process_gone(f"process:{host}::1:1")  # where the machine is unknown
    assert not process_gone("process:nonsense")


def test_the_start_time_of_a_process_with_any_name_is_read(tmp_path: Path) -> None:
    # The command name in /proc/<pid>/stat is bytes, not text, and may hold ")".
    odd = tmp_path / "sl\u00e8ep) x"
    shutil.copy(shutil.which("sleep") or "/bin/sleep", odd)
    child = subprocess.Popen([str(odd), "60"])
    try:
        started = process_tag(child.pid).rsplit(":", 1)[1]
        assert started.isdigit()
    finally:
        child.kill()
        child.wait()


@pytest.mark.integration
def test_only_the_runs_whose_process_is_gone_are_marked_crashed(prefect_api_url: str) -> None:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.objects import StateType
    from prefect.states import Cancelled, Running

    from ragplate.flows.tune_floor import tune_floor

    tags: dict[str, list[str]] = {
        "killed": [_killed_process_tag()], "alive": [process_tag()],
        "elsewhere": ["process:another-machine:0123456789ab.1:1:1"], "untagged": [],
        # Retried from the UI in this process: the tag read is the newest.
        "retried": [_killed_process_tag(), process_tag()]}
    runs: dict[str, Any] = {}
    with get_client(sync_client=True) as client:
        for name, run_tags in tags.items():
            runs[name] = client.create_flow_run(tune_floor, parameters={}, state=Running(),
                                                tags=run_tags)
        current = client.create_flow_run(tune_floor, parameters={}, state=Running())

        # A run retried in this process after its first process died.
        retried = client.create_flow_run(tune_floor, parameters={}, state=Running(),
                                         tags=["nightly", _killed_process_tag()])

    # The retried run starts in this process: it names it before it looks at the others.
    crashed = crash_runs_of_gone_processes("tune-floor", current=str(retried.id))
    crashed += crash_runs_of_gone_processes("tune-floor", current=str(current.id))

    assert str(runs["killed"].id) in crashed and str(runs["alive"].id) not in crashed
    assert str(retried.id) not in crashed and str(current.id) not in crashed
    with get_client(sync_client=True) as client:
        states = {name: client.read_flow_run(run.id).state for name, run in runs.items()}
        # The current run now names this process, for the runs that come after it; a
        # retried one names this process in place of the dead one.
        assert process_tag() in client.read_flow_run(current.id).tags
        assert sorted(client.read_flow_run(retried.id).tags) == sorted(
            ["nightly", process_tag()])
    assert states["killed"] is not None and states["killed"].type == StateType.CRASHED
    assert states["killed"].message == GONE_REASON.format(flow="tune-floor")
    assert all(state is not None and state.type == StateType.RUNNING
               for name, state in states.items() if name != "killed")
    with get_client(sync_client=True) as client:  # no run left RUNNING for later tests
        for run in [*runs.values(), current, retried]:
            client.set_flow_run_state(run.id, Cancelled(), force=True)


def test_a_worker_stop_marks_the_runs_of_the_processes_it_killed_crashed(
        prefect_api_url: str, tmp_path: Path) -> None:
    """The supervisor reads each killed process's ``PREFECT__FLOW_RUN_ID``: that run, and
    only that run, is marked CRASHED."""
    import sys
    import time

    from prefect.client.orchestration import get_client
    from prefect.client.schemas.objects import StateType
    from prefect.states import Cancelled, Completed, Running

    from ragplate.flows.tune_floor import tune_floor
    from ragplate.infra.flow_runs import KILLED_REASON
    from tests.infra.test_worker_stop import SUPERVISOR, WORKER, _gone

    with get_client(sync_client=True) as client:
        killed = client.create_flow_run(tune_floor, parameters={}, state=Running())
        other = client.create_flow_run(tune_floor, parameters={}, state=Running())
    pid_file = tmp_path / "run.pid"
    supervisor = subprocess.Popen(
        [sys.executable, "-c", SUPERVISOR, WORKER, str(pid_file), "lingers"], cwd=tmp_path,
        env={**os.environ, "PREFECT_API_URL": prefect_api_url,
             "PREFECT__FLOW_RUN_ID": str(killed.id)},
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 30
    while not (pid_file.exists() and pid_file.read_text()):
        assert time.monotonic() < deadline, "the stand-in worker did not start"
        time.sleep(0.05)
    flow_run = int(pid_file.read_text())

    supervisor.send_signal(signal.SIGTERM)  # it lingers: killed after its 2 s
    output, _ = supervisor.communicate(timeout=30)

    assert _gone(flow_run)
    assert f"Marked 1 killed flow run(s) crashed: {killed.id}" in output
    with get_client(sync_client=True) as client:
        state = client.read_flow_run(killed.id).state
        assert state is not None and state.type == StateType.CRASHED
        assert state.message == KILLED_REASON
        still = client.read_flow_run(other.id).state
        assert still is not None and still.type == StateType.RUNNING
        client.set_flow_run_state(other.id, Cancelled(), force=True)
        # A run that ended before the kill keeps its state.
        done = client.create_flow_run(tune_floor, parameters={}, state=Completed())
    from ragplate.infra.flow_runs import crash_killed_runs

    assert crash_killed_runs(prefect_api_url, {str(done.id)}) == []
    # No server: nothing marked, nothing raised (the supervisor is stopping anyway).
    assert crash_killed_runs("http://127.0.0.1:9/api", {str(killed.id)}) == []

"""``ragplate worker``'s supervision (``run_worker``): one SIGTERM or Ctrl-C stops the worker
even when it lingers in its graceful shutdown, and nothing it started outlives it."""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest

#: A stand-in for a Prefect worker: it starts a "flow run" in a session of its own (as a
#: process worker does), writes that pid, then either leaves on SIGTERM or ignores it.
WORKER = textwrap.dedent("""
    import os, signal, subprocess, sys, time
    if sys.argv[2].endswith("lingers"):
        signal.signal(signal.SIGTERM, lambda *_: print("still shutting down", flush=True))
    if sys.argv[2].startswith("idle"):  # no flow run: its own pid instead
        open(sys.argv[1], "w").write(str(os.getpid()))
    else:
        run = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"],
                               start_new_session=True)
        open(sys.argv[1], "w").write(str(run.pid))
    while True:
        time.sleep(0.1)
""")

#: The supervisor, as ``ragplate worker`` runs it, with a short stop delay.
SUPERVISOR = textwrap.dedent("""
    import sys
    from pathlib import Path
    from ragplate.infra.prefect_deployments import run_worker
    code = run_worker([sys.executable, "-c", sys.argv[1], sys.argv[2], sys.argv[3]],
                      dict(__import__("os").environ), Path.cwd(), stop_seconds=2.0)
    print("exit", code, flush=True)
""")


def _start(tmp_path: Path, behaviour: str,
           worker: str = WORKER) -> tuple[subprocess.Popen[str], int]:
    """The supervisor running ``worker`` (given ``behaviour``), and the pid it wrote."""
    pid_file = tmp_path / "run.pid"
    supervisor = subprocess.Popen(
        [sys.executable, "-c", SUPERVISOR, worker, str(pid_file), behaviour],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 30
    while not (pid_file.exists() and pid_file.read_text()):
        assert time.monotonic() < deadline, "the stand-in worker did not start"
        time.sleep(0.05)
    return supervisor, int(pid_file.read_text())


def _gone(pid: int, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.05)
    return False


@pytest.mark.parametrize("behaviour", ["leaves", "lingers"])
def test_one_sigterm_stops_the_worker_and_what_it_started(tmp_path: Path,
                                                          behaviour: str) -> None:
    supervisor, flow_run = _start(tmp_path, behaviour)
    started = time.monotonic()

    supervisor.send_signal(signal.SIGTERM)
    output, _ = supervisor.communicate(timeout=20)

    assert time.monotonic() - started < 10  # the 2 s allowed, then killed
    assert "Stopping the worker" in output
    assert ("did not stop within 2 s" in output) == (behaviour == "lingers")
    assert "No flow run in progress" not in output  # a flow run was: it had its delay
    assert _gone(flow_run), "the flow run's process outlived the worker"


def test_an_idle_worker_that_lingers_is_stopped_without_waiting_out_the_delay(
        tmp_path: Path) -> None:
    supervisor, worker = _start(tmp_path, "idle-lingers")

    supervisor.send_signal(signal.SIGTERM)
    output, _ = supervisor.communicate(timeout=20)

    assert "still shutting down" in output  # it did linger
    assert "No flow run in progress: the worker is stopped." in output
    assert "did not stop within" not in output
    assert "exit 0" in output
    assert _gone(worker)


def test_a_second_signal_kills_at_once(tmp_path: Path) -> None:
    supervisor, flow_run = _start(tmp_path, "lingers")
    supervisor.send_signal(signal.SIGINT)
    time.sleep(0.3)
    supervisor.send_signal(signal.SIGINT)
    output, _ = supervisor.communicate(timeout=10)

    assert "Second signal: killing the worker." in output
    assert "did not stop within" not in output
    assert _gone(flow_run)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_the_worker_does_not_outlive_a_supervisor_killed_with_sigkill(tmp_path: Path) -> None:
    # "idle": the stand-in writes its own pid, the worker's.
    supervisor, worker = _start(tmp_path, "idle-lingers")
    assert psutil.Process(worker).ppid() == supervisor.pid

    supervisor.kill()  # no handler runs: only the kernel can stop the worker now
    supervisor.communicate(timeout=10)

    try:
        assert _gone(worker), "the worker outlived its supervisor and would go on taking runs"
    finally:
        with contextlib.suppress(psutil.Error):
            psutil.Process(worker).kill()  # a failing run leaves no stray process behind


#: The supervisor with a ``follow`` that says the server moved once a file exists.
FOLLOWING = textwrap.dedent("""
    import os, sys
    from pathlib import Path
    from ragplate.infra.prefect_deployments import ServerMoved, run_worker
    moved = Path(sys.argv[4])
    env = {**os.environ, "PREFECT_API_URL": "http://127.0.0.1:4200/api"}
    try:
        code = run_worker([sys.executable, "-c", sys.argv[1], sys.argv[2], sys.argv[3]], env,
                          Path.cwd(), stop_seconds=2.0, follow_seconds=0.2,
                          follow=lambda: moved.read_text() if moved.exists() else None)
        print("exit", code, flush=True)
    except ServerMoved as exc:
        print("moved to", exc.url, flush=True)
""")


@pytest.mark.parametrize("behaviour", ["idle", "busy"])
def test_a_worker_follows_its_homes_server_when_it_moves_and_no_run_is_in_progress(
        tmp_path: Path, behaviour: str) -> None:
    pid_file, moved = tmp_path / "run.pid", tmp_path / "moved"
    supervisor = subprocess.Popen(
        [sys.executable, "-c", FOLLOWING, WORKER, str(pid_file), behaviour, str(moved)],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 30
    while not (pid_file.exists() and pid_file.read_text()):
        assert time.monotonic() < deadline, "the stand-in worker did not start"
        time.sleep(0.05)
    started = int(pid_file.read_text())
    moved.write_text("http://127.0.0.1:4201/api")  # this home's server listens there now
    if behaviour == "busy":
        # A flow run in progress keeps the worker: it is not cut off to follow the server.
        with pytest.raises(subprocess.TimeoutExpired):
            supervisor.communicate(timeout=2)
        supervisor.send_signal(signal.SIGTERM)
        output, _ = supervisor.communicate(timeout=20)
        assert "moved to" not in output
    else:
        output, _ = supervisor.communicate(timeout=20)
        assert output.strip().splitlines()[-1] == "moved to http://127.0.0.1:4201/api"
    assert _gone(started)


#: A stand-in Prefect worker whose "flow run" starts as every ragplate flow does (its first
#: statement watches the worker), then only sleeps (a run whose logging could not notice
#: that the worker is gone).
WORKER_WITH_RUN = textwrap.dedent("""
    import os, subprocess, sys, time
    env = {**os.environ, "PREFECT__FLOW_RUN_ID": "00000000-0000-0000-0000-000000000000",
           "PREFECT_API_URL": "http://127.0.0.1:9/api"}  # nothing listens: best effort
    load = ("from ragplate.infra.worker_watch import watch_worker; watch_worker(); "
            "import time; time.sleep(600)")
    run = subprocess.Popen([sys.executable, "-c", load], start_new_session=True, env=env,
                           cwd=sys.argv[2], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    open(sys.argv[1], "w").write(str(run.pid))
    while True:
        time.sleep(0.1)
""")


def test_a_flow_run_ends_when_the_worker_that_started_it_is_killed(tmp_path: Path) -> None:
    checkout = Path(__file__).resolve().parents[2]
    supervisor, run = _start(tmp_path, str(checkout), WORKER_WITH_RUN)
    try:
        environ = psutil.Process(run).environ()
        assert environ["RAGPLATE_WORKER_PID"] == str(supervisor.pid)
        time.sleep(3)  # the run has started and watches its worker
        assert not _gone(run, timeout=0.1), "the flow run did not load"

        supervisor.kill()
        supervisor.communicate(timeout=10)

        assert _gone(run, timeout=15), "the flow run outlived the worker that started it"
    finally:
        with contextlib.suppress(psutil.Error):
            psutil.Process(run).kill()  # a failing run leaves no stray process behind
        supervisor.kill()


def test_nothing_is_watched_outside_a_flow_run_a_worker_started() -> None:
    from ragplate.infra.worker_watch import watch_worker

    assert watch_worker({}) is False
    assert watch_worker({"RAGPLATE_WORKER_PID": "1", "RAGPLATE_WORKER_STARTED": "x",
                         "PREFECT__FLOW_RUN_ID": "r"}) is False


def test_every_flow_starts_by_watching_the_worker_that_started_it() -> None:
    """Prefect loads a deployment's flow file as a script: the watch is each flow's first
    statement (after its docstring), not a side effect of importing a package."""
    import ast

    flows = Path(__file__).resolve().parents[2] / "ragplate" / "flows"
    found = []
    for path in sorted(flows.glob("*.py")):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.FunctionDef) and any(
                    "flow" in ast.unparse(d) for d in node.decorator_list):
                first = node.body[1]
                assert ast.unparse(first) == "watch_worker()", f"{path.name}:{node.name}"
                found.append(node.name)
    assert len(found) >= 10

"""The deployments of ``prefect.yaml`` on a Prefect server, and a worker that runs them.

Registering is Prefect's own ``prefect deploy --all`` run as a subprocess from the checkout
(what an operator would type), after ragplate has checked the file and created the work
pools it names; what was registered is then read back from the API. The worker is
``prefect worker start --pool ragplate`` in the foreground. Both get the same environment:
the Prefect API of :func:`ragplate.infra.prefect_server.start`, this ``RAGPLATE_HOME``, and
``RAGPLATE_CHECKOUT``, the directory the deployments' pull step moves into before loading a
flow. Prefect fills ``{{ $RAGPLATE_CHECKOUT }}`` when deploying if the variable is set then
(``ragplate deploy`` sets it: the path is stored with each deployment); a plain ``prefect
deploy`` without it stores the placeholder, which the flow run's process fills from the
worker's environment (``ragplate worker`` sets it too).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ragplate.catalog.errors import (
    ConfigurationError,
    EmptyVariableError,
    RagplateError,
    ServiceError,
    is_blank,
)
from ragplate.catalog.settings import Settings
from ragplate.infra import flow_runs, prefect_server, worker_watch
from ragplate.infra.home import (
    ensure_dir,
    prefect_home_environment,
    prefect_logging_environment,
)

PREFECT_FILE = "prefect.yaml"
#: The work pool of every deployment ragplate declares, and the worker type it runs.
POOL = "ragplate"
POOL_TYPE = "process"
#: The environment variable the pull step of ``prefect.yaml`` reads.
CHECKOUT_VARIABLE = "RAGPLATE_CHECKOUT"
DEPLOY_LOG = "prefect-deploy.log"
#: How long ``prefect deploy --all`` may take: it imports every flow module once.
DEPLOY_TIMEOUT = 900.0


@dataclass(frozen=True)
class Declared:
    """One deployment as ``prefect.yaml`` declares it."""

    name: str
    entrypoint: str
    work_pool: str
    work_queue: str | None
    schedules: list[dict[str, Any]] = field(default_factory=list)


def project_root(checkout: str | None, package_checkout: Path, cwd: Path) -> Path:
    """The directory holding ``prefect.yaml``: ``checkout`` (``RAGPLATE_CHECKOUT``) when
    given, else the checkout ragplate runs from, else ``cwd``. Raises
    :class:`ConfigurationError` when the chosen directory has no ``prefect.yaml``, and
    :class:`EmptyVariableError` when ``checkout`` is given but empty."""
    if checkout is not None and is_blank(checkout):
        raise EmptyVariableError([CHECKOUT_VARIABLE])
    if checkout is not None:
        root = Path(checkout).expanduser().resolve()
        if not (root / PREFECT_FILE).is_file():
            raise ConfigurationError(f"{CHECKOUT_VARIABLE}={checkout}: no {PREFECT_FILE} there; "
                                     "point it at a ragplate checkout")
        return root
    for candidate in (package_checkout, cwd):
        if (candidate / PREFECT_FILE).is_file():
            return candidate.resolve()
    raise ConfigurationError(f"no {PREFECT_FILE} in {package_checkout} or {cwd}: run from a "
                             f"ragplate checkout or set {CHECKOUT_VARIABLE} to one")


def declared_deployments(root: Path) -> list[Declared]:
    """The deployments of ``root/prefect.yaml``, checked before anything is registered:
    each has a name, an entrypoint whose file exists under ``root`` and a work pool."""
    path = root / PREFECT_FILE
    try:
        config = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigurationError(f"{path}: cannot be read as YAML: {exc}") from None
    entries = config.get("deployments") if isinstance(config, dict) else None
    if not isinstance(entries, list) or not entries:
        raise ConfigurationError(f"{path}: declares no deployments")
    found, problems = [], []
    for position, entry in enumerate(entries, 1):
        name = entry.get("name") if isinstance(entry, dict) else None
        if not isinstance(name, str) or not name:
            problems.append(f"deployment {position}: no name")
            continue
        entrypoint = entry.get("entrypoint")
        script = str(entrypoint).partition(":")[0] if entrypoint else ""
        pool = entry.get("work_pool") or {}
        if not entrypoint or ":" not in str(entrypoint):
            problems.append(f"{name}: no entrypoint 'path/to/file.py:flow'")
        elif not (root / script).is_file():
            problems.append(f"{name}: entrypoint file {script} does not exist")
        elif not _defines(root / script, str(entrypoint).partition(":")[2]):
            problems.append(f"{name}: entrypoint file {script} defines no "
                            f"{str(entrypoint).partition(':')[2]!r}")
        if not isinstance(pool, dict) or not pool.get("name"):
            problems.append(f"{name}: no work_pool.name")
            continue
        found.append(Declared(name, str(entrypoint), str(pool["name"]),
                              pool.get("work_queue_name"), list(entry.get("schedules") or [])))
    if problems:
        raise ConfigurationError(f"{path}: " + "; ".join(problems) + "; nothing was registered")
    return found


def _defines(script: Path, function: str) -> bool:
    """Whether ``script`` defines ``function`` at its top level, read without running it
    (Prefect would import it, then fail with its own error and exit 1)."""
    import ast

    try:
        tree = ast.parse(script.read_text(encoding="utf-8"), filename=str(script))
    except (OSError, SyntaxError, ValueError):
        return False
    return any(isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
               and node.name == function for node in tree.body)


def prefect_environment(settings: Settings, api_url: str, root: Path,
                        environ: Mapping[str, str]) -> dict[str, str]:
    """The environment of ``prefect deploy`` and of the worker (and so of every flow run
    the worker starts): ``environ`` with the Prefect API, this home and the checkout."""
    env = dict(environ)
    env.update(
        PREFECT_API_URL=api_url,
        # Explicit, so a flow run uses this home even when it was derived (XDG_DATA_HOME).
        RAGPLATE_HOME=str(settings.home),
        PREFECT_SERVER_ANALYTICS_ENABLED="false",
    )
    env.setdefault("DO_NOT_TRACK", "1")  # Prefect's client-side telemetry, unless set
    env[CHECKOUT_VARIABLE] = str(root)
    # Prefect's own files (its home, results of failed runs) stay under RAGPLATE_HOME, in
    # the directory the local server uses, unless the operator chose another.
    env.update(prefect_home_environment(settings.home, environ))
    env.update(prefect_logging_environment(environ))
    return env


def ensure_work_pools(api_url: str, names: Iterable[str]) -> list[str]:
    """Create each missing work pool as a ``process`` pool with Prefect's default job
    template; returns the names created (an existing pool is left as it is)."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import WorkPoolCreate
    from prefect.exceptions import ObjectAlreadyExists, ObjectNotFound
    from prefect.workers.process import ProcessWorker

    created = []
    with _api(api_url), get_client(sync_client=True) as client:
        for name in dict.fromkeys(names):
            try:
                client.read_work_pool(name)
                continue
            except ObjectNotFound:
                pass
            template = ProcessWorker.get_default_base_job_template()
            try:
                client.create_work_pool(WorkPoolCreate(name=name, type=POOL_TYPE,
                                                       base_job_template=template))
            except ObjectAlreadyExists:  # created meanwhile by another deploy or worker
                continue
            created.append(name)
    return created


def deploy(settings: Settings, root: Path, environ: Mapping[str, str]) -> dict[str, Any]:
    """Register every deployment of ``root/prefect.yaml`` on the Prefect server of
    ``settings`` (``PREFECT_API_URL``, or the local one, started if needed).

    Returns ``api_url``, ``ui_url``, ``checkout``, ``work_pools_created`` and
    ``deployments`` as the server now holds them (:func:`registered`). Prefect's output is
    kept in ``RAGPLATE_HOME/logs/prefect-deploy.log``.
    """
    declared = declared_deployments(root)
    api_url = prefect_server.start(settings)
    created = ensure_work_pools(api_url, [d.work_pool for d in declared])
    env = prefect_environment(settings, api_url, root, environ)
    command = [sys.executable, "-m", "prefect", "deploy", "--all", "--no-prompt",
               "--prefect-file", str(root / PREFECT_FILE)]
    ensure_dir(settings.log_dir)
    log = settings.log_dir / DEPLOY_LOG
    try:
        result = subprocess.run(command, cwd=root, env=env, stdin=subprocess.DEVNULL,
                                capture_output=True, text=True, timeout=DEPLOY_TIMEOUT,
                                check=False)
    except subprocess.TimeoutExpired:
        raise ServiceError(f"prefect deploy --all did not finish in {DEPLOY_TIMEOUT:.0f} s "
                           f"against {api_url}") from None
    log.write_text(result.stdout + result.stderr, encoding="utf-8")
    if result.returncode != 0:
        raise RagplateError(f"prefect deploy --all failed (exit {result.returncode}): "
                            f"{_last_line(result.stdout + result.stderr)}; see {log}")
    return {"api_url": api_url, "ui_url": prefect_server.ui_url(api_url), "checkout": str(root),
            "work_pools_created": created, "deployments": registered(api_url, declared)}


def registered(api_url: str, declared: list[Declared]) -> list[dict[str, Any]]:
    """What the server holds for each declared deployment, in the file's order: ``name``,
    ``flow``, ``id``, ``entrypoint``, ``work_pool``, ``work_queue``, ``schedules`` (each
    ``cron`` or ``interval``, ``timezone``, ``active``) and ``url`` (its page in the UI).
    Raises :class:`RagplateError` naming a declared deployment the server does not hold."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import DeploymentFilter, DeploymentFilterName

    names = [d.name for d in declared]
    with _api(api_url), get_client(sync_client=True) as client:
        held = client.read_deployments(
            deployment_filter=DeploymentFilter(name=DeploymentFilterName(any_=names)))
        flows = {flow_id: client.read_flow(flow_id).name for flow_id in {d.flow_id for d in held}}
    ui = prefect_server.ui_url(api_url)
    rows, missing = [], []
    for wanted in declared:
        # The same name may exist for another flow (on a shared server): the entrypoint
        # tells ragplate's apart.
        match = next((d for d in held if d.name == wanted.name
                      and d.entrypoint == wanted.entrypoint), None)
        if match is None:
            missing.append(wanted.name)
            continue
        rows.append({
            "name": match.name, "flow": flows[match.flow_id], "id": str(match.id),
            "entrypoint": match.entrypoint, "work_pool": match.work_pool_name,
            "work_queue": match.work_queue_name,
            "schedules": [_schedule(s) for s in match.schedules],
            "url": f"{ui}/deployments/deployment/{match.id}" if ui else None,
        })
    if missing:
        raise RagplateError(f"the Prefect server at {api_url} does not hold "
                            f"{', '.join(missing)} after prefect deploy --all")
    return rows


def _schedule(schedule: Any) -> dict[str, Any]:
    inner = schedule.schedule
    row: dict[str, Any] = {"active": bool(schedule.active)}
    if getattr(inner, "cron", None):
        row["cron"] = inner.cron
    elif getattr(inner, "interval", None) is not None:
        row["interval"] = inner.interval.total_seconds()
    elif getattr(inner, "rrule", None):
        row["rrule"] = inner.rrule
    row["timezone"] = getattr(inner, "timezone", None)
    return row


def worker_command(pool: str = POOL) -> list[str]:
    """``prefect worker start`` for ``pool``; ``--type`` makes Prefect create a missing
    pool as a process pool rather than ask."""
    return [sys.executable, "-m", "prefect", "worker", "start", "--pool", pool,
            "--type", POOL_TYPE]


def worker_process(settings: Settings, root: Path,
                   environ: Mapping[str, str]) -> tuple[list[str], dict[str, str]]:
    """The command and environment of a worker for the ``ragplate`` pool, once the server
    is started (or reached) and the pool exists."""
    api_url = prefect_server.start(settings)
    ensure_work_pools(api_url, [POOL])
    return worker_command(), prefect_environment(settings, api_url, root, environ)


#: How long a stopping worker is given to finish the flow runs it holds before it is killed.
WORKER_STOP_SECONDS = 30.0


#: Seconds a stopped worker with no flow run in progress has to leave on its own before it
#: is killed (a process worker may linger in its graceful shutdown while idle).
IDLE_STOP_SECONDS = 1.0


#: How often a running worker checks where this home's Prefect server listens.
FOLLOW_SECONDS = 10.0


class ServerMoved(Exception):
    """This home's Prefect server now listens at another URL (it was started again on a
    free port): the worker was stopped, to be started again against it."""

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.url = url


def run_worker(command: list[str], env: dict[str, str], root: Path, *,
               stop_seconds: float = WORKER_STOP_SECONDS,
               say: Callable[[str], None] = print,
               follow: Callable[[], str | None] | None = None,
               follow_seconds: float = FOLLOW_SECONDS) -> int:
    """Run the worker in ``root`` until it ends or is stopped; returns its exit code.

    Prefect's process worker does not always leave on its first SIGTERM or Ctrl-C: it may
    stay in its graceful shutdown, still taking new flow runs, until a second signal kills
    it. So the worker runs as a child in a process group of its own, and the first
    SIGINT or SIGTERM here asks it to stop (SIGTERM), gives it ``stop_seconds`` to finish,
    then kills it with every process it started; a second signal kills them at once.
    Nothing of it outlives this process. ``follow`` tells, every ``follow_seconds``, where
    the server the worker should poll listens now: when that is not its
    ``PREFECT_API_URL`` and no flow run is in progress, the worker is stopped and
    :class:`ServerMoved` raised (a worker polling a server that moved would fail at every
    poll, forever)."""
    import psutil

    # A flow run's process runs in a session of its own, so it is not in the worker's
    # group, and it outlives a worker that dies: as a subreaper (Linux), this process
    # inherits such orphans and finds them among its own descendants; elsewhere they are
    # noted while the worker runs.
    _become_subreaper()
    # Every flow run the worker starts inherits these, and ends once this process is gone.
    env = {**env, **worker_watch.worker_identity()}
    process = subprocess.Popen(command, env=env, cwd=root, start_new_session=True,
                               preexec_fn=_die_with_parent(os.getpid()))
    stopping: list[float] = []
    seen: dict[int, psutil.Process] = {}
    killed_runs: set[str] = set()  # the flow runs of the processes killed

    def note() -> None:
        for parent in (process.pid, os.getpid()):
            with contextlib.suppress(psutil.Error):
                for child in psutil.Process(parent).children(recursive=True):
                    seen.setdefault(child.pid, child)

    def kill_group() -> None:
        note()
        for child in seen.values():
            with contextlib.suppress(psutil.Error):
                if child.is_running() and child.status() != psutil.STATUS_ZOMBIE:
                    # Prefect names a flow run's process by this variable: the run itself,
                    # not a pid another machine or container may also use.
                    run_id = child.environ().get("PREFECT__FLOW_RUN_ID")
                    if run_id:
                        killed_runs.add(run_id)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
        for child in seen.values():
            with contextlib.suppress(psutil.Error):
                child.kill()

    def on_signal(signum: int, _frame: object) -> None:
        if stopping:
            say("Second signal: killing the worker.")
            kill_group()
            return
        stopping.append(time.monotonic())
        say(f"Stopping the worker: flow runs in progress have {stop_seconds:g} s to finish "
            "(a second Ctrl-C kills it now).")
        with contextlib.suppress(ProcessLookupError):
            process.send_signal(signal.SIGTERM)

    def running_flow_runs() -> bool:
        # Every process but the worker itself: its children and the orphaned flow runs.
        for child in seen.values():
            with contextlib.suppress(psutil.Error):
                if (child.pid != process.pid and child.is_running()
                        and child.status() != psutil.STATUS_ZOMBIE):
                    return True
        return False

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    checked = time.monotonic()
    try:
        while True:
            try:
                return process.wait(timeout=0.5)
            except subprocess.TimeoutExpired:
                note()
                if (follow is not None and not stopping
                        and time.monotonic() - checked >= follow_seconds):
                    checked = time.monotonic()
                    now = follow()
                    # A stop asked for while it looked (a second or two) is a stop.
                    if (now and now != env.get("PREFECT_API_URL") and not stopping
                            and not running_flow_runs()):
                        kill_group()
                        process.wait()
                        raise ServerMoved(now) from None
                if (stopping and time.monotonic() - stopping[0] > IDLE_STOP_SECONDS
                        and not running_flow_runs()):
                    # Nothing to let finish: a lingering idle worker would only wait out
                    # the delay (and could still take a new flow run meanwhile).
                    say("No flow run in progress: the worker is stopped.")
                    kill_group()
                    process.wait()
                    return 0
                if stopping and time.monotonic() - stopping[0] > stop_seconds:
                    say(f"The worker did not stop within {stop_seconds:g} s: killed.")
                    kill_group()
    finally:
        kill_group()  # whatever the worker left in its group (flow-run processes)
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        # A flow run whose process was killed would show RUNNING until the next run of its
        # flow: the UI is told now.
        api_url = env.get("PREFECT_API_URL")
        crashed = (flow_runs.crash_killed_runs(api_url, killed_runs)
                   if api_url and killed_runs else [])
        if crashed:
            say(f"Marked {len(crashed)} killed flow run(s) crashed: {', '.join(crashed)}")


def _die_with_parent(parent: int) -> Callable[[], None] | None:
    """What the worker's child runs before its command (Linux): be killed when ``parent``
    dies, even by SIGKILL, which no handler here can catch (``PR_SET_PDEATHSIG``). A
    Prefect worker left behind would go on taking flow runs with a stale environment."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    # Looked up here, in the parent: between fork and exec the child only calls it (a
    # dlopen there could wait forever on a lock another thread held at the fork).
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None

    def arm() -> None:
        prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
        if os.getppid() != parent:  # the parent died before the request was made
            os._exit(1)

    return arm


def _become_subreaper() -> None:
    """Make this process the subreaper of its descendants (``PR_SET_CHILD_SUBREAPER``),
    where the system has it."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)


def _last_line(output: str) -> str:
    """The last non-blank line of Prefect's output, its error as a rule."""
    lines = [line.strip(" │╭╮╰╯─") for line in output.splitlines()]
    lines = [line for line in lines if line]
    return lines[-1] if lines else "no output"


@contextmanager
def _api(api_url: str) -> Iterator[None]:
    """Prefect's settings pointed at ``api_url`` inside the block."""
    from prefect import settings as ps

    with ps.temporary_settings(updates={ps.PREFECT_API_URL: api_url}):
        yield

"""``ragplate deploy`` and ``ragplate worker``: the deployments of ``prefect.yaml``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any

import typer
from rich import box
from rich.table import Table

from ragplate.cli.output import console, print_json
from ragplate.cli.paths import PROJECT_ROOT


def _root() -> Path:
    """The checkout holding ``prefect.yaml`` (``RAGPLATE_CHECKOUT``, else this one)."""
    from ragplate.infra.prefect_deployments import CHECKOUT_VARIABLE, project_root

    return project_root(os.environ.get(CHECKOUT_VARIABLE), PROJECT_ROOT, Path.cwd())


def deploy(json_output: Annotated[bool, typer.Option("--json")] = False) -> None:
    """Register every deployment of prefect.yaml on the Prefect server.

    The server is PREFECT_API_URL, or the local one of `ragplate up`
    (started if needed). The work pool `ragplate` is created (process type)
    when missing. Runs `prefect deploy --all` from the checkout named by
    RAGPLATE_CHECKOUT, default this one. Runs need a worker: `ragplate worker`.

    Example: ragplate deploy --json
    """
    from ragplate.infra import prefect_deployments
    from ragplate.infra.environment import get_settings

    settings, root = get_settings(), _root()
    if json_output:
        result = prefect_deployments.deploy(settings, root, os.environ)
        print_json(result)
        return
    with console.status(f"Registering the deployments of {root / 'prefect.yaml'}…"):
        result = prefect_deployments.deploy(settings, root, os.environ)
    _print(result)


def _print(result: dict[str, Any]) -> None:
    # The flow and the pool are in --json: 80 columns hold the name, queue and schedule.
    table = Table(title=f"{len(result['deployments'])} deployments registered",
                  box=box.SIMPLE_HEAD)
    table.add_column("deployment", no_wrap=True)
    table.add_column("work queue", overflow="fold")
    table.add_column("schedule", overflow="fold")
    for row in result["deployments"]:
        table.add_row(row["name"], row["work_queue"],
                      "\n".join(_schedule(s) for s in row["schedules"]) or "by hand")
    console.print(table)
    for pool in result["work_pools_created"]:
        console.print(f"Created the work pool {pool} (process type).", highlight=False)
    console.print(f"Prefect API: {result['api_url']}", highlight=False, soft_wrap=True)
    if result["ui_url"]:
        console.print(f"Deployments in the Prefect UI: {result['ui_url']}/deployments",
                      highlight=False, soft_wrap=True)
    console.print("Start a worker to run them: ragplate worker", highlight=False)


def _schedule(schedule: dict[str, Any]) -> str:
    every = schedule.get("cron") or schedule.get("rrule") or f"every {schedule.get('interval')} s"
    zone = f" {schedule['timezone']}" if schedule.get("timezone") else ""
    return f"{every}{zone}" + ("" if schedule["active"] else " (inactive)")


def worker() -> None:
    """Run a Prefect worker for the `ragplate` pool in the foreground.

    It is `prefect worker start --pool ragplate` with ragplate's environment,
    which every flow run it starts inherits: the Prefect server of
    `ragplate deploy`, this RAGPLATE_HOME, and RAGPLATE_CHECKOUT (default
    this checkout). Ctrl-C (or SIGTERM) stops it: flow runs in progress get
    30 s to finish, then the worker and what it started are killed; a second
    Ctrl-C kills them at once.

    Example: ragplate worker
    """
    from ragplate.infra import prefect_deployments, prefect_server
    from ragplate.infra.environment import get_settings

    root = _root()
    settings = get_settings()
    while True:
        command, env = prefect_deployments.worker_process(settings, root, os.environ)
        console.print(f"Prefect API: {env['PREFECT_API_URL']}; flow runs start in {root} "
                      f"with RAGPLATE_HOME={env['RAGPLATE_HOME']}", highlight=False,
                      soft_wrap=True)
        try:
            code = prefect_deployments.run_worker(
                command, env, root, say=lambda text: console.print(text, highlight=False),
                follow=lambda: prefect_server.running_api_url(settings))
        except prefect_deployments.ServerMoved as moved:
            console.print(f"This home's Prefect server now listens at {moved.url}: the "
                          "worker follows it.", highlight=False)
            continue
        raise typer.Exit(code if code >= 0 else 128 - code)


def register(app: typer.Typer) -> None:
    """Attach ``deploy`` and ``worker`` to the root app."""
    app.command("deploy")(deploy)
    app.command("worker")(worker)

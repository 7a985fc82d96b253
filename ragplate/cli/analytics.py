"""``ragplate analytics``: the documentation query analytics store — retention, erasure,
(re)creation, and the corpus-gap report."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from ragplate.cli import analytics_report
from ragplate.cli.output import confirm, console, examples, print_json

if TYPE_CHECKING:
    from ragplate.infra.runtime import Runtime

JSON = typer.Option("--json", help='Print {"deleted": N} (or the result) as JSON.')


def _runtime() -> Runtime:
    from ragplate.infra.environment import get_settings
    from ragplate.infra.runtime import Runtime

    return Runtime(get_settings())


def prune_command(json_output: Annotated[bool, JSON] = False) -> None:
    """Delete the query records older than RAGPLATE_QUERY_LOGGING_RETENTION_DAYS (30). Works
    with logging off; nothing to do without a store.

    Example: ragplate analytics prune --json
    """
    from ragplate.tasks.analytics.retention import prune

    runtime = _runtime()
    days = runtime.settings.query_logging_retention_days
    deleted = prune(runtime.query_log, retention_days=days)
    if json_output:
        print_json({"deleted": deleted})
        return
    console.print(f"deleted {deleted} query record(s) older than {days} days",
                  highlight=False)


def erase_command(
    user: Annotated[str, typer.Argument(help="The person's name (or their id with --id).")],
    by_id: Annotated[bool, typer.Option(
        "--id", help="USER is a person's numeric id (for someone already deleted).")] = False,
    json_output: Annotated[bool, JSON] = False,
) -> None:
    """Delete every query record of a person: their reference under RAGPLATE_APP_KEY and
    under each key of RAGPLATE_APP_PREVIOUS_KEYS. Works with logging off.

    Examples:

        ragplate analytics erase ada --json

        ragplate analytics erase 42 --id
    """
    from ragplate.catalog.errors import ConfigurationError, InvalidInputError
    from ragplate.infra import people
    from ragplate.tasks.analytics.retention import NO_KEY, erase

    # Both refused before any service starts. An id is ASCII digits: str.isdigit() also
    # takes '²' (int() fails on it) and '٣' (which int() reads as 3: another person).
    if by_id and not (user.isascii() and user.isdigit()):
        raise InvalidInputError(f"USER: {user[:40]!r} is not a numeric id (with --id: "
                                "ASCII digits 0-9)")
    runtime = _runtime()
    if runtime.settings.app_key is None:
        raise ConfigurationError(NO_KEY)
    if by_id:
        user_id = int(user)
    else:
        with runtime.engine.connect() as conn:
            user_id = people.person_by_name(conn, user).id
    deleted = erase(runtime.query_log, runtime.settings, user_id=user_id)
    if json_output:
        print_json({"deleted": deleted})
        return
    console.print(f"deleted {deleted} query record(s) of {escape(user)}", highlight=False)


def create_store_command(
    force: Annotated[bool, typer.Option(
        "--force", help="Drop the store first: every query record is lost.")] = False,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask before --force.")
                   ] = False,
    json_output: Annotated[bool, typer.Option("--json", help='Print {"created": bool}.')
                           ] = False,
) -> None:
    """Create the query analytics store (the rag_queries table, which the database
    migrations create too; with RAGPLATE_ELASTICSEARCH_URL the {app}_rag_queries index,
    mapping dynamic: strict). --force recreates it and loses its records, after a prompt.

    Example: ragplate analytics create-store --force --yes
    """
    if force and not yes and not confirm(
            "Recreate the query analytics store? Every logged question is lost."):
        typer.echo("Nothing changed.", err=True)
        raise typer.Exit(1)
    created = _runtime().query_log.create(force=force)
    if json_output:
        print_json({"created": created})
        return
    console.print("created the query analytics store" if created else
                  "the query analytics store exists (--force recreates it)", highlight=False)


def register(app: typer.Typer) -> None:
    """Attach the ``analytics`` group."""
    group = typer.Typer(help="Documentation query analytics: retention, erasure, the "
                        "corpus-gap report.", no_args_is_help=True,
                        epilog=examples(
                            "ragplate analytics report --since 7d --output gaps.html",
                            "ragplate analytics erase ada",
                            "ragplate analytics prune --json"))
    group.command("prune")(prune_command)
    group.command("erase")(erase_command)
    group.command("create-store")(create_store_command)
    group.command("report")(analytics_report.report_command)
    app.add_typer(group, name="analytics")

"""``ragplate users``: people and their API tokens."""

from __future__ import annotations

from datetime import UTC
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape
from rich.table import Table

from ragplate.cli.output import confirm, console, examples, make_console, print_json

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

JSON = typer.Option("--json", help="Print the result as JSON.")


def _engine() -> Engine:
    from ragplate.infra.environment import get_settings
    from ragplate.infra.runtime import Runtime

    return Runtime(get_settings()).engine


def create_command(
    name: Annotated[str, typer.Argument(help="A unique name: letters, digits, _ . @ -.")],
    permission: Annotated[list[str] | None, typer.Option(
        "--permission", "-p", help="A permission to grant (repeat for several), e.g. "
        "docs.developer (search the developer index) or tenants.operator.")] = None,
    tenant: Annotated[str | None, typer.Option(
        help="The person's tenant (none: global documents and records only).")] = None,
    locale: Annotated[str, typer.Option(help="The person's language (en, it, …).")] = "en",
    guest: Annotated[bool, typer.Option(
        "--guest", help="A guest: never reaches the assistant or application search.")] = False,
    json_output: Annotated[bool, JSON] = False,
) -> None:
    """Add a person. They need a token (ragplate users token NAME) to call the API.

    Examples:

        ragplate users create ada --permission docs.developer

        ragplate users create mario --tenant acme --locale it --permission crud.read --json
    """
    from ragplate.tasks.people.accounts import create_person

    person = create_person(_engine(), name=name, permissions=permission or [], tenant=tenant,
                           locale=locale, is_guest=guest)
    if json_output:
        print_json(person.as_dict())
        return
    console.print(f"created {escape(person.name)} (id {person.id})", highlight=False)


def token_command(
    name: Annotated[str, typer.Argument(help="The person's name.")],
    impersonated_by: Annotated[str | None, typer.Option(
        "--impersonated-by", help="An operator (tenants.operator) who will act as the "
        "person with this token; such a session is never logged in the query analytics. "
        "It lives 8 hours unless --expires-in says otherwise (at most 24h)."
        )] = None,
    expires_in: Annotated[str | None, typer.Option(
        "--expires-in", metavar="DURATION", help="How long this token lives: 30m, 12h, "
        "30d (1m to 3650d). Default: RAGPLATE_TOKEN_TTL_DAYS days (90 unless set).")] = None,
    json_output: Annotated[bool, JSON] = False,
) -> None:
    """Issue a new API token for a person. It is shown once and stored hashed: keep it.
    It expires after RAGPLATE_TOKEN_TTL_DAYS (or --expires-in); then it is a 401.

    Examples:

        ragplate users token ada --json

        ragplate users token ada --expires-in 12h
    """
    from ragplate.catalog.people import token_lifetime
    from ragplate.infra.environment import get_settings
    from ragplate.tasks.people.accounts import issue

    ttl_days = get_settings().token_ttl_days
    # Refused before the database starts.
    token_lifetime(expires_in, ttl_days=ttl_days, impersonated=impersonated_by is not None)
    issued = issue(_engine(), name=name, impersonated_by=impersonated_by,
                   expires_in=expires_in, ttl_days=ttl_days)
    if json_output:
        print_json(issued.as_dict())
        return
    print(issued.token)
    typer.echo(f"expires {issued.as_dict()['expires_at']}", err=True)


def list_command(json_output: Annotated[bool, JSON] = False) -> None:
    """List people, with their live tokens and the nearest expiry among them.

    Each person's tenant, locale, permissions and guest flag, how many tokens they hold
    that are neither revoked nor expired, and when the first of those expires.

    Example: ragplate users list --json
    """
    from ragplate.tasks.people.accounts import list_all

    rows = list_all(_engine())
    if json_output:
        print_json([row.as_dict() for row in rows])
        return
    table = Table(title=f"{len(rows)} person(s)")
    for column in ("name", "tenant", "locale", "permissions", "guest", "tokens",
                   "next expiry (UTC)"):
        table.add_column(column)
    for row in rows:
        p = row.person
        expiry = row.next_token_expiry
        table.add_row(escape(p.name), escape(p.tenant or ""), p.locale,
                      escape(", ".join(sorted(p.permissions))), "yes" if p.is_guest else "",
                      str(row.active_tokens),
                      "" if expiry is None else f"{expiry.astimezone(UTC):%Y-%m-%d %H:%M}")
    console.print(table)


def revoke_command(
    name: Annotated[str, typer.Argument(help="The person's name.")],
    json_output: Annotated[bool, JSON] = False,
) -> None:
    """Revoke every live token of a person, and those they hold to act as someone.

    Their own tokens and those issued with --impersonated-by them: the next request with
    any of them is a 401. Expired tokens are not counted.

    Example: ragplate users revoke ada
    """
    from ragplate.tasks.people.accounts import revoke

    count = revoke(_engine(), name=name)
    if json_output:
        print_json({"revoked": count})
        return
    console.print(f"revoked {count} token(s) of {escape(name)}", highlight=False)


def delete_command(
    name: Annotated[str, typer.Argument(help="The person's name.")],
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
    json_output: Annotated[bool, JSON] = False,
) -> None:
    """Delete a person with their tokens, conversations and messages, and erase their
    query records (under RAGPLATE_APP_KEY and RAGPLATE_APP_PREVIOUS_KEYS).

    Without RAGPLATE_APP_KEY their query records cannot be found: the person is deleted,
    and the command says so, with the id to erase them by later (analytics erase ID --id).
    When the erasure fails (Elasticsearch unreachable, a broken store) the person is still
    deleted and shown with that command, the failure named in one line and its exit code
    (3 for a service).

    Example: ragplate users delete ada --yes
    """
    from ragplate.tasks.analytics.retention import NO_KEY
    from ragplate.tasks.people.accounts import delete

    if not yes and not confirm(f"Delete {name} and their conversations?"):
        typer.echo("Nothing deleted.", err=True)
        raise typer.Exit(1)
    from ragplate.infra.environment import get_settings

    deleted = delete(_engine(), name=name, settings=get_settings())
    person = deleted.person
    erase_later = f"then run: ragplate analytics erase {person.id} --id"
    failure = deleted.erase_error
    later = (None if deleted.records_erased is not None else
             f"query records not erased: {failure if failure else NO_KEY}; {erase_later}")
    if json_output:
        print_json({"deleted": person.as_dict(), "records_erased": deleted.records_erased,
                    **({"warning": later} if later else {})})
    else:
        console.print(f"deleted {escape(person.name)} (id {person.id}), "
                      + (f"{deleted.records_erased} query record(s) erased"
                         if deleted.records_erased is not None else "query records not erased"),
                      highlight=False)
        if later and failure is None:
            make_console(stderr=True).print(f"[yellow]Warning:[/yellow] {escape(later)}",
                                            highlight=False, soft_wrap=True)
    if failure is not None:  # the person is gone: say so above, then fail as the store did
        make_console(stderr=True).print(f"[red]Error:[/red] {escape(later or '')}",
                                        highlight=False, soft_wrap=True)
        raise typer.Exit(failure.exit_code)


def register(app: typer.Typer) -> None:
    """Attach the ``users`` group."""
    group = typer.Typer(help="People who use the API and the assistant, and their tokens.",
                        epilog=examples(
                            "ragplate users create ada --permission docs.developer "
                            "--tenant acme",
                            "ragplate users token ada",
                            "ragplate users list --json"),
                        no_args_is_help=True)
    group.command("create")(create_command)
    group.command("token")(token_command)
    group.command("list")(list_command)
    group.command("revoke")(revoke_command)
    group.command("delete")(delete_command)
    app.add_typer(group, name="users")

"""``ragplate index create``: the documentation indexes of the serving profile."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.markup import escape

from ragplate.cli.output import confirm, console, examples, print_json

PROFILES = ("developer", "user", "all")


def create_command(
    profile: Annotated[str, typer.Option(
        "--profile", help="Which documentation index: developer, user or all.")] = "all",
    force: Annotated[bool, typer.Option(
        "--force", help="Drop each index first (its documents are lost; run index-docs "
                        "after).")] = False,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask before --force.")
                   ] = False,
    json_output: Annotated[bool, typer.Option(
        "--json", help='Print {"indexes": [{index, profile, store, name, alias, outcome}]}.')
    ] = False,
) -> None:
    """Create the documentation indexes of the serving embedding profile. On
    Elasticsearch: each index with the mapping ragplate writes (the profile's dimensions
    and similarity, keyword fields for every filter, source_type among them) and its alias
    pointed at it; --force drops and recreates it with the active profile's dimensions.
    On PostgreSQL the migrations make the tables; --force empties the index, after a
    prompt (--yes answers it).

    Examples:

        ragplate index create --profile all

        ragplate index create --profile user --force --yes --json
    """
    from ragplate.catalog.errors import InvalidInputError
    from ragplate.infra.environment import get_settings
    from ragplate.infra.runtime import Runtime
    from ragplate.tasks.indexing.create import create_indexes

    if profile not in PROFILES:
        raise InvalidInputError(f"--profile {profile[:40]!r}: use developer, user or all")
    chosen = ("developer", "user") if profile == "all" else (profile,)
    if force and not yes and not confirm(
            f"Empty the {' and '.join(chosen)} documentation index"
            f"{'es' if len(chosen) > 1 else ''}? Their documents are lost until index-docs "
            "runs again."):
        typer.echo("Nothing changed.", err=True)
        raise typer.Exit(1)
    rows = create_indexes(Runtime(get_settings()), chosen, force=force)
    if json_output:
        print_json({"indexes": rows})
        return
    for row in rows:
        alias = f" (alias {row['alias']})" if row["alias"] else ""
        console.print(f"{row['index']}: {row['outcome']} {escape(str(row['name']))}{alias} "
                      f"on {row['store']}, profile {escape(row['profile'])}", highlight=False)


def register(app: typer.Typer) -> None:
    """Attach the ``index`` group."""
    group = typer.Typer(help="The documentation indexes themselves.", no_args_is_help=True,
                        epilog=examples(
                            "ragplate index create --profile all --json",
                            "ragplate index create --profile user --force --yes"))
    group.command("create")(create_command)
    app.add_typer(group, name="index")

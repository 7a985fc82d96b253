"""``ragplate db upgrade``: the database schema."""

from __future__ import annotations

from typing import Annotated

import typer

from ragplate.cli.output import console, examples


def db_upgrade(revision: Annotated[str, typer.Argument()] = "head") -> None:
    """Apply the schema migrations (also done automatically on first use).

    Example: ragplate db upgrade head
    """
    from ragplate.infra.database import current_revision, get_engine, upgrade
    from ragplate.infra.environment import get_settings

    engine = get_engine(get_settings(), migrate=False)
    upgrade(engine, revision)
    current = current_revision(engine)
    if revision not in ("head", current):
        # Alembic upgrades to an older revision by doing nothing: say so.
        console.print(f"database at revision {current}, already past {revision}: ragplate "
                      "does not downgrade (restore a backup taken before the upgrade to go "
                      "back)")
        return
    console.print(f"database at revision {current}")


def register(app: typer.Typer) -> None:
    """Attach the ``db`` group to the root app."""
    group = typer.Typer(help="Database schema.", no_args_is_help=True,
                        epilog=examples(
                            "ragplate db upgrade"))
    group.command("upgrade")(db_upgrade)
    app.add_typer(group, name="db")

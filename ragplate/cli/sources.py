"""``ragplate sources list`` and ``ragplate sources remove``."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from ragplate.cli.output import console, examples, print_json


class IndexChoice(StrEnum):
    developer = "developer"
    user = "user"
    all = "all"


def _indexes(choice: IndexChoice) -> list[str]:
    return ["developer", "user"] if choice is IndexChoice.all else [choice.value]


def list_command(
    index: Annotated[IndexChoice, typer.Option(help="Which index to list.")] = IndexChoice.all,
    prefix: Annotated[str | None, typer.Option(
        help="Only labels starting with this text (e.g. faq-module-AI/).")] = None,
    json_output: Annotated[bool, typer.Option("--json", help="Print the sources as JSON.")] = False,
) -> None:
    """List the sources the documentation indexes hold: label, chunks of the serving
    model, the models holding it, when it was indexed and from which root.

    Examples:

        ragplate sources list --index developer --prefix faq-module-AI/

        ragplate sources list --json
    """
    from ragplate.infra.environment import get_settings
    from ragplate.infra.runtime import Runtime
    from ragplate.tasks.indexing.sources import list_sources

    sources = list_sources(Runtime(get_settings()), indexes=_indexes(index), prefix=prefix)
    if json_output:
        print_json([s.as_dict() for s in sources])
        return
    table = Table(title=f"{len(sources)} source(s)")
    # A label is what `sources remove` takes: never cut; the other columns fold around it.
    widest = max((len(s.label) for s in sources), default=5)
    for column in ("index", "label", "chunks", "models", "indexed at", "root prefix"):
        table.add_column(column, justify="right" if column == "chunks" else "left",
                         overflow="fold", min_width=widest if column == "label" else None)
    for s in sources:
        models = ", ".join(s.models) + ("" if s.serving else " (not the serving model)")
        when = s.indexed_at.strftime("%Y-%m-%d %H:%M") if s.indexed_at else ""
        table.add_row(s.index, escape(s.label), str(s.chunks), escape(models), when,
                      _prefix(s.root))
    console.print(table)


def remove_command(
    labels: Annotated[list[str], typer.Argument(help="Source labels, as `sources list` shows.")],
    index: Annotated[IndexChoice, typer.Option(
        help="Remove from this index only (default: both).")] = IndexChoice.all,
    json_output: Annotated[bool, typer.Option("--json", help="Print what was removed as "
                                                             "JSON.")] = False,
) -> None:
    """Remove sources from the documentation indexes: their chunks, keyword vectors and
    records, for every embedding model, in one transaction. Every label must be indexed,
    or nothing is removed. A file still under a configured root comes back with the next
    index-docs run.

    Example: ragplate sources remove faq-module-AI/GLOSSARY.md --index developer
    """
    from ragplate.infra.environment import get_settings
    from ragplate.infra.runtime import Runtime
    from ragplate.tasks.indexing.sources import remove_sources_everywhere

    removal = remove_sources_everywhere(Runtime(get_settings()), indexes=_indexes(index),
                                        labels=labels)
    if json_output:
        print_json(removal.as_dict())
        return
    for (name, model), (chunks, records) in sorted(removal.deleted.items()):
        console.print(f"{name} / {escape(model)}: {records} source(s), {chunks} chunk(s) removed",
                      highlight=False)


def register(app: typer.Typer) -> None:
    """Attach the ``sources`` group."""
    group = typer.Typer(help="See and remove the sources of the documentation indexes.",
                        no_args_is_help=True,
                        epilog=examples(
                            "ragplate sources list --prefix faq-app-ragplate/ --json",
                            "ragplate sources remove faq-app-ragplate/old-page.md"))
    group.command("list")(list_command)
    group.command("remove")(remove_command)
    app.add_typer(group, name="sources")


def _prefix(root: str | None) -> str:
    """A root as the table shows it: its label prefix, ``''`` for the bare one (what
    ``--prefix ''`` indexed), nothing when unknown (indexed before roots were recorded)."""
    if root is None:
        return ""
    return escape(root) if root else "''"

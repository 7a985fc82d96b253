"""``ragplate search``: application search from the terminal."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

import typer
from rich.markup import escape

from ragplate.cli.output import console, print_json


class SearchMode(StrEnum):
    fast = "fast"
    balanced = "balanced"
    deep = "deep"


def search(
    query: Annotated[str, typer.Argument(help="What to look for.")],
    entity: Annotated[str, typer.Option(help="The entity to search.")] = "cms.contents",
    mode: Annotated[SearchMode, typer.Option(help="fast, balanced or deep.")] = (
        SearchMode.balanced
    ),
    locale: Annotated[str, typer.Option(help="Language of the results.")] = "en",
    tenant: Annotated[str | None, typer.Option(help="The tenant asking.")] = None,
    top_k: Annotated[int, typer.Option(min=1, max=50, help="Hits to return (1-50).")] = 10,
    json_output: Annotated[
        bool, typer.Option("--json", help="Print {hits, meta: {search}} as JSON.")
    ] = False,
) -> None:
    """Search application records (keyword, vector, hybrid), as POST /v1/search does.

    Example: ragplate search "how do I rebuild the index" --mode balanced --json
    """
    from ragplate.catalog.people import check_tenant
    from ragplate.infra.environment import get_settings
    from ragplate.infra.runtime import Runtime
    from ragplate.tasks.retrieval.application import search_with_runtime

    # An empty --tenant is refused, as POST /v1/search and every other command refuse it,
    # rather than read as no tenant.
    check_tenant(tenant)

    result = search_with_runtime(Runtime(get_settings()), entity=entity, query=query,
                                 mode=mode.value, locale=locale, tenant=tenant, top_k=top_k)
    if json_output:
        print_json(result.as_dict())
        return
    meta = result.meta
    served = meta.mode + (f" (asked {meta.mode_requested}: {meta.degraded_reason})"
                          if meta.degraded_reason else "")
    model = f", model {meta.model_key}" if meta.model_key else ""
    console.print(f"[dim]mode {escape(served)}{escape(model)}, strategies "
                  f"{', '.join(meta.strategies)}[/dim]", highlight=False)
    if not result.hits:
        console.print("No records found.")
        return
    for rank, hit in enumerate(result.hits, 1):
        console.print(f"[bold]\\[{rank}] #{escape(hit.id)} {escape(hit.title)}[/bold]  "
                      f"[dim]({hit.locale}, score {hit.score:.4f}"
                      + (f", similarity {hit.similarity:.4f}" if hit.similarity is not None
                         else "") + ")[/dim]", highlight=False)
        console.print(hit.excerpt, markup=False, highlight=False)


def register(app: typer.Typer) -> None:
    """Attach ``search`` to the root app."""
    app.command("search")(search)

"""``index-docs`` and ``retrieve``."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal, cast

import typer
from rich.markup import escape
from rich.table import Table

from ragplate.catalog.documents import AccessContext
from ragplate.catalog.errors import ConfigurationError, InvalidInputError
from ragplate.cli.output import (
    console,
    flow_progress,
    make_console,
    print_json,
    quiet_expected_errors,
)

if TYPE_CHECKING:
    from ragplate.infra.runtime import Runtime


class IndexProfile(StrEnum):
    developer = "developer"
    user = "user"
    all = "all"


class IndexName(StrEnum):
    developer = "developer"
    user = "user"


def index_docs(
    profile: Annotated[IndexProfile, typer.Option(help="Which index to build.")] = IndexProfile.all,
    # A string, not a Path: typer turns "" into Path("."), the working directory.
    path: Annotated[
        str | None, typer.Option(help="Index this directory instead of the configured roots.")
    ] = None,
    prefix: Annotated[
        str | None,
        typer.Option(help="Label prefix for --path ('' for bare relative paths; default: the "
                     "directory name)."),
    ] = None,
    full: Annotated[bool, typer.Option("--full", help="Re-embed every source.")] = False,
    allow_empty: Annotated[
        bool,
        typer.Option("--allow-empty", help="Let a root without Markdown files delete the "
                     "sources it indexed (refused otherwise: usually a missing mount)."),
    ] = False,
    always_run: Annotated[
        bool,
        typer.Option("--always-run", help="Start a flow run even when the index is up to "
                     "date (by default such a run is answered without one)."),
    ] = False,
    json_output: Annotated[bool, typer.Option(
        "--json", help='Print {"indexes": [{index, sources_read, unchanged, re_embedded, '
        'deleted, chunks_written, seconds}]}.')] = False,
) -> None:
    """Index documentation through the Prefect flow [bold]index-rag-docs[/bold].

    Every source is read and validated first; an invalid one (e.g. an unknown audience)
    stops the run with the store unchanged. Unchanged sources are not embedded again. A
    root that holds no Markdown file while the index holds its sources stops the run too,
    unless --allow-empty. When nothing would change, the command says so without starting
    a flow run (--always-run starts one; scheduled deployments always do). While another
    run holds the index lock it exits 3 at once, without a flow run, whatever the options.

    Example: ragplate index-docs --path ../shared/corpora/laraplate --prefix '' --full
    """
    from ragplate.infra.environment import get_settings
    from ragplate.infra.runtime import Runtime
    from ragplate.tasks.indexing.index import headed
    from ragplate.tasks.indexing.targets import explicit_root
    from ragplate.tasks.indexing.up_to_date import refuse_emptied_roots, up_to_date_rows

    settings = get_settings()
    # Before any service: the roots of this run, and the configured ones, which the check
    # for an up-to-date index reads even for a --path run.
    explicit_root(path, prefix)
    settings.all_roots()
    # A run of the configured roots indexes each: a missing one starts nothing. (A --path
    # run leaves them to the up-to-date check, as an installed package has no docs/.)
    for label, root in settings.docs_roots.items() if path is None else ():
        if not Path(root).is_dir():
            named = ("RAGPLATE_DOCS_ROOTS" if "docs_roots" in settings.model_fields_set
                     else "the default documentation root (set RAGPLATE_DOCS_ROOTS)")
            raise ConfigurationError(f"{named} {label!r}: {root} is not a directory")
    runtime = Runtime(settings)
    runtime.engine  # noqa: B018 - start PostgreSQL and migrate before the flow
    if not allow_empty:
        refuse_emptied_roots(runtime, profile=profile.value, path=path, prefix=prefix)
    rows = up_to_date_rows(runtime, profile=profile.value, path=path, prefix=prefix,
                           full=full, always_run=always_run)
    if rows is None:
        rows = _flow_run(runtime, profile=profile.value, path=path, prefix=prefix,
                         full=full, allow_empty=allow_empty, json_output=json_output)
    elif not json_output:
        console.print("Up to date: nothing to embed, delete or record; no flow run was "
                      "started (--always-run starts one).")
    if json_output:
        print_json({"indexes": rows})
        return
    table = Table(title="index-rag-docs")
    for key in headed(rows[0]) if rows else []:
        table.add_column(key)
    for row in rows:
        table.add_row(*(str(v) for v in row.values()))
    console.print(table)


def _flow_run(runtime: Runtime, *, profile: str, path: str | None, prefix: str | None,
              full: bool, allow_empty: bool, json_output: bool) -> list[dict[str, object]]:
    """The rows of a run of the flow, reporting to this home's Prefect server."""
    from ragplate.infra.prefect_server import prefect_api

    with prefect_api(runtime.settings):
        from ragplate.flows.index_docs import index_rag_docs
        quiet_expected_errors()

        with flow_progress(json_output):
            return index_rag_docs(profile=cast(Literal["developer", "user", "all"], profile),
                                  path=path, prefix=prefix, full=full,
                                  allow_empty=allow_empty)


def retrieve(
    question: Annotated[str, typer.Argument(help="The question to retrieve documentation for.")],
    index: Annotated[IndexName, typer.Option(help="developer or user index.")] = (
        IndexName.developer
    ),
    top_k: Annotated[int | None, typer.Option(help="Hits to return (1-10).")] = None,
    tenant: Annotated[str | None, typer.Option(help="User index: the tenant asking.")] = None,
    locale: Annotated[str | None, typer.Option(help="User index: only this locale.")] = None,
    permission: Annotated[
        list[str] | None, typer.Option(help="User index: a permission held (repeatable).")
    ] = None,
    module: Annotated[str | None, typer.Option(help="User index: only this module.")] = None,
    json_output: Annotated[bool, typer.Option("--json", help="Print hits as JSON.")] = False,
) -> None:
    """Retrieve cited documentation for a question.

    Example: ragplate retrieve "How does incremental indexing work?" --top-k 3 --json
    """
    from ragplate.catalog.assistant import check_module
    from ragplate.catalog.people import check_locale, check_permissions, check_tenant
    from ragplate.catalog.text import check_text
    from ragplate.infra.environment import get_settings
    from ragplate.infra.runtime import Runtime
    from ragplate.tasks.retrieval.documentation import retrieve_with_runtime

    check_text(question, "QUESTION")  # before any service starts
    given = [name for name, value in (("--tenant", tenant), ("--locale", locale),
                                      ("--permission", permission), ("--module", module))
             if value is not None and value != []]
    if index is IndexName.developer and given:
        raise InvalidInputError(f"{', '.join(given)}: filters of the user index only (add "
                                f"--index user); the developer index is searched unfiltered")
    access = None
    if index is IndexName.user:
        # Checked like `users create` checks them: a typo would otherwise read as an
        # empty answer.
        access = AccessContext(tenant=check_tenant(tenant),
                               locale=None if locale is None else check_locale(locale),
                               permissions=check_permissions(permission or []),
                               module=None if module is None else check_module(module))
    runtime = Runtime(get_settings())
    hits = retrieve_with_runtime(runtime, question, index=index.value, top_k=top_k,
                                 access=access)
    # An empty index answers every question with nothing, which on a new home says nothing
    # a person can act on.
    empty = not hits and runtime.store(index.value).count() == 0
    if json_output:
        if empty:
            make_console(stderr=True).print(_empty_index(index.value), highlight=False)
        print_json({"hits": [h.as_dict() for h in hits]})
        return
    if not hits:
        console.print(_empty_index(index.value) if empty
                      else "No documentation found for this question.", highlight=False)
        return
    for rank, hit in enumerate(hits, 1):
        data = hit.as_dict()
        crumb = f" › {data['heading_breadcrumb']}" if data["heading_breadcrumb"] else ""
        label, crumb = escape(str(data["source_label"])), escape(crumb)
        # In vector mode the score is the similarity: shown once.
        similar = (f", similarity {data['similarity']:.4f}"
                   if f"{data['similarity']:.4f}" != f"{data['score']:.4f}" else "")
        console.print(f"[bold]\\[{rank}] {label}[/bold]{crumb}  "
                      f"[dim](score {data['score']:.4f}{similar})[/dim]", highlight=False)
        console.print(data["excerpt"], markup=False, highlight=False)
        console.print()


def _empty_index(index: str) -> str:
    return (f"The {index} index holds no documentation of the serving embedding model: "
            "run `ragplate index-docs` first.")


def register(app: typer.Typer) -> None:
    """Attach the commands to the root app."""
    app.command("index-docs")(index_docs)
    app.command("retrieve")(retrieve)

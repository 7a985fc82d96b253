"""``ragplate demo seed``: fill cms.contents with realistic records."""

from __future__ import annotations

from typing import Annotated

import typer

from ragplate.cli.output import console, examples, print_json, progress_bar


def seed(
    records: Annotated[int, typer.Option(min=1, max=1_000_000, help="Records to add.")] = 100,
    locales: Annotated[
        str, typer.Option(help="Comma-separated locales; each record gets one translation per "
                          "locale (the text is ragplate's English docs for every locale).")
    ] = "en",
    tenant: Annotated[str, typer.Option(help="Tenant of the records ('global': everyone).")] = (
        "global"
    ),
    reset: Annotated[
        bool, typer.Option("--reset", help="Delete every cms.contents record first.")
    ] = False,
    batch_size: Annotated[
        int, typer.Option(min=1, max=1000, help="Records per embedding call and transaction.")
    ] = 32,
    json_output: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
) -> None:
    """Add published cms.contents records made from the paragraphs of ragplate's docs/,
    embedded with the serving model (and a switch's target while a switch runs).

    Example: ragplate demo seed --records 500 --locales en,it
    """
    from ragplate.infra.environment import get_settings
    from ragplate.infra.runtime import Runtime
    from ragplate.tasks.records.demo import check_seed_options, reset_demo, seed_demo
    from ragplate.tasks.records.texts import embedding_profiles_for_writes

    wanted = [loc.strip() for loc in locales.split(",")]
    check_seed_options(records=records, batch_size=batch_size, locales=wanted, tenant=tenant)
    runtime = Runtime(get_settings())
    engine = runtime.engine
    deleted = reset_demo(engine) if reset else 0
    profiles = embedding_profiles_for_writes(engine)
    bar = progress_bar(json_output)
    with bar:
        task = bar.add_task("cms.contents", total=records)
        summary = seed_demo(
            engine, records=records, profiles=profiles,
            locales=wanted,
            tenant=tenant, batch_size=batch_size,
            embedder_for=lambda profile: runtime.embedder(profile),
            on_progress=lambda done, total: bar.update(task, completed=done, total=total),
            search_index=runtime.record_index,
        )
    models = [p.key for p in profiles]
    data = {"records": summary.records, "texts": summary.texts, "deleted": deleted,
            "first_key": summary.first_key, "last_key": summary.last_key,
            "models": models, "index_created": summary.index_created,
            "seconds": round(summary.seconds, 2)}
    if json_output:
        print_json(data)
        return
    console.print(f"{counted(summary.records, 'record')} ({counted(summary.texts, 'text')}) "
                  f"added to cms.contents, "
                  f"keys {summary.first_key}–{summary.last_key}, embedded with "
                  f"{', '.join(models)} in {data['seconds']} s", highlight=False)


def counted(number: int, noun: str) -> str:
    """``1 record``, ``2 records``."""
    return f"{number} {noun}{'' if number == 1 else 's'}"


def register(app: typer.Typer) -> None:
    """Attach the ``demo`` group to the root app."""
    group = typer.Typer(help="Demo data for application search.", no_args_is_help=True,
                        epilog=examples(
                            "ragplate demo seed --records 500 --locales en,it"))
    group.command("seed")(seed)
    app.add_typer(group, name="demo")

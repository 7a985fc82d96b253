"""``ragplate evaluate application-content``, ``ragplate evaluate strategies`` and
``ragplate tune-retrieval``: application-search evaluation and fusion tuning, each through
its Prefect flow."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ragplate.api.cli.output import console, print_json, quiet_expected_errors

Source = Annotated[str, typer.Option(help="The entity searched (module.entity).")]
Dataset = Annotated[Path, typer.Option(help="Application-content dataset (JSON).")]
Output = Annotated[Path, typer.Option(help="Report file to write (JSON; the HTML page goes "
                                      "beside it).")]
Force = Annotated[bool, typer.Option("--force", help="Overwrite an existing report.")]
JsonOutput = Annotated[bool, typer.Option("--json", help="Print the report as JSON.")]


class SearchMode(StrEnum):
    fast = "fast"
    balanced = "balanced"
    deep = "deep"


def _run(output: Path, force: bool, flow_name: str, **parameters: Any) -> dict[str, Any]:
    """Refuse the output before any service starts, then run the flow against the Prefect
    server of the runtime (started if needed)."""
    from ragplate.catalog.datasets import ApplicationContentDataset
    from ragplate.tasks.content_eval import check_dataset
    from ragplate.tasks.datasets import read_dataset
    from ragplate.tasks.reports import check_output

    check_output(output, force=force)
    # The dataset and --source too: a mistake there must not start services or leave a
    # failed flow run behind.
    check_dataset(read_dataset(parameters["dataset"], ApplicationContentDataset).data,
                  parameters["source"])
    from ragplate.flows import evaluate_content
    from ragplate.infra.prefect_server import prefect_api
    from ragplate.infra.runtime import Runtime

    runtime = Runtime()
    runtime.engine  # noqa: B018 - start PostgreSQL and migrate before the flow
    with prefect_api(runtime.settings):
        quiet_expected_errors()
        report: dict[str, Any] = getattr(evaluate_content, flow_name)(
            output=str(output), force=force, **parameters)
    return report


def _metrics_table(title: str, rows: list[tuple[str, Any]]) -> None:
    table = Table(title=title)
    table.add_column("metric")
    table.add_column("value", justify="right")
    for key, value in rows:
        table.add_row(key, str(value))
    console.print(table)


def application_content(source: Source = "cms.contents", *, dataset: Dataset, output: Output,
                        force: Force = False,
                        mode: Annotated[SearchMode, typer.Option(
                            help="Search mode the cases run in.")] = SearchMode.balanced,
                        json_output: JsonOutput = False) -> None:
    """Score application search on a dataset through the Prefect flow
    [bold]evaluate-application-content[/bold]: each case in its locale, as its tenant, no
    chat model; metrics overall and per locale and category.

    Example: ragplate evaluate application-content --source cms.contents --dataset
    datasets/application-content-fixture.json --output reports/content.json
    """
    report = _run(output, force, "evaluate_application_content", source=source,
                  dataset=str(dataset), mode=mode.value)
    if json_output:
        print_json(report)
        return
    _metrics_table(f"{report['source']} ({report['search']['mode']})",
                   [*report["metrics"].items(),
                    *((f"latency {k} ms", v) for k, v in report["latency_ms"].items())])
    console.print(f"Report: {output} (HTML: {output.with_suffix('.html')})", highlight=False)


def _warn(block: dict[str, Any]) -> None:
    from ragplate.tasks.strategy_eval import reranker_warning

    warning = reranker_warning(block)
    if warning:  # stderr: a --json report on stdout stays parseable
        Console(stderr=True).print(f"[yellow]Warning:[/yellow] {escape(warning)}",
                                   highlight=False, soft_wrap=True)


def strategies(source: Source = "cms.contents", *, dataset: Dataset, output: Output,
               force: Force = False, json_output: JsonOutput = False) -> None:
    """Score each ordering (keyword, vector, hybrid, fused, reranked) through the Prefect
    flow [bold]evaluate-retrieval-strategies[/bold]; warns when the reranker did not run.

    Example: ragplate evaluate strategies --source cms.contents --dataset
    datasets/application-content-fixture.json --output reports/strategies.json
    """
    report = _run(output, force, "evaluate_retrieval_strategies", source=source,
                  dataset=str(dataset))
    if json_output:
        print_json(report)
    else:
        table = Table(title=f"{report['source']}: per strategy (pre-authorization)")
        keys = ("hit_at_5", "mean_reciprocal_rank", "ndcg_at_5", "recall_at_5")
        for column in ("strategy", "cases", *keys):
            table.add_column(column, justify="left" if column == "strategy" else "right")
        for name, values in report["metrics"].items():
            table.add_row(name, str(report["strategy_cases"][name]),
                          *(str(values[k]) for k in keys))
        console.print(table)
        reranker = report["reranker"]
        console.print(f"reranker: {reranker['status']} ({reranker['ran']} of "
                      f"{reranker['requested']}), model {reranker['model']}", highlight=False)
        console.print(f"Report: {output} (HTML: {output.with_suffix('.html')})",
                      highlight=False)
    _warn(report["reranker"])


def tune_retrieval(
    source: Source = "cms.contents", *, dataset: Dataset, output: Output, force: Force = False,
    grid: Annotated[str, typer.Option(help="default (108 candidates) or a JSON file holding "
                                      "a list of parameter sets.")] = "default",
    metric: Annotated[str, typer.Option(help="The metric candidates are ranked by.")] = (
        "ndcg_at_5"),
    holdout: Annotated[float, typer.Option(min=0.0, max=0.99, help="Share of the cases kept "
                                           "out of the selection (0 disables).")] = 0.3,
    min_class_cases: Annotated[int, typer.Option(min=1, help="Fewest selection cases for a "
                                                 "class override.")] = 8,
    class_margin: Annotated[float, typer.Option(min=0.0, max=1.0, help="Gain over the "
                                                "overall winner a class override needs.")] = 0.01,
    noise_margin: Annotated[str, typer.Option(help="auto (one case: 1 / selection cases, at "
                                              "least 0.01), a number from 0 to 1, or 0 (off)."
                                              )] = "auto",
    json_output: JsonOutput = False,
) -> None:
    """Tune application search's fusion through the Prefect flow
    [bold]tune-retrieval[/bold]: record each case's rankings once, re-fuse them for every
    candidate, validate on held-out cases, print the ready-to-paste profile block.

    Example: ragplate tune-retrieval --source cms.contents --dataset ~/private/cms.json
    --output reports/tuning.json --holdout 0.3
    """
    from ragplate.tasks.ranking_pages import paste_block
    from ragplate.tasks.tune import Safeguards, parse_noise_margin
    from ragplate.tasks.tune_grid import load_grid

    margin = parse_noise_margin(noise_margin)
    Safeguards(metric=metric, holdout=holdout, min_class_cases=min_class_cases,
               class_margin=class_margin, noise_margin=margin)
    load_grid(grid)  # refuse a bad grid before anything starts
    report = _run(output, force, "tune_retrieval", source=source, dataset=str(dataset),
                  grid=grid, metric=metric, holdout=holdout, min_class_cases=min_class_cases,
                  class_margin=class_margin, noise_margin=margin)
    if json_output:
        print_json(report)
    else:
        console.print(f"outcome: {report['outcome']} (noise {report['noise']['status']}, "
                      f"hold-out validation {report['validation']['status']})",
                      highlight=False)
        console.print(f"Report: {output} (HTML: {output.with_suffix('.html')})",
                      highlight=False)
        # soft_wrap: a wrapped comment line would lose its "#" when pasted.
        console.print(paste_block(report, output.name), markup=False, highlight=False,
                      soft_wrap=True)
    _warn(report["reranked"]["reranker"])


def register(root: typer.Typer, evaluate: typer.Typer) -> None:
    """Add the commands: two under ``evaluate``, ``tune-retrieval`` at the top level."""
    evaluate.command("application-content")(application_content)
    evaluate.command("strategies")(strategies)
    root.command("tune-retrieval")(tune_retrieval)

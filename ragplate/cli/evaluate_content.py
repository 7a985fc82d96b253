"""``ragplate evaluate application-content`` and ``ragplate evaluate strategies``:
application-search evaluation, each through its Prefect flow (``tune-retrieval`` shares
their options and :func:`run_flow`: :mod:`ragplate.cli.tuning`)."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from ragplate.cli.output import console, make_console, print_json, quiet_expected_errors

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


def run_flow(output: Path, force: bool, flow_name: str, **parameters: Any) -> dict[str, Any]:
    """Refuse the output before any service starts, then run the flow against the Prefect
    server of the runtime (started if needed)."""
    from ragplate.catalog.datasets import ApplicationContentDataset
    from ragplate.infra.environment import get_settings
    from ragplate.tasks.evaluation.application_content import check_dataset
    from ragplate.tasks.evaluation.dataset_files import read_dataset
    from ragplate.tasks.evaluation.reports import check_output

    grid = parameters.get("grid", "default")
    check_output(output, force=force, inputs=[parameters["dataset"]],
                 also_reads={} if grid == "default" else {"the --grid file": grid})
    settings = get_settings()
    # The dataset and --source too: a mistake there must not start services or leave a
    # failed flow run behind.
    check_dataset(read_dataset(parameters["dataset"], ApplicationContentDataset).data,
                  parameters["source"], settings, where=parameters["dataset"])
    from ragplate.flows import evaluate_content
    from ragplate.infra.prefect_server import prefect_api
    from ragplate.infra.runtime import Runtime

    runtime = Runtime(settings)
    runtime.engine  # noqa: B018 - start PostgreSQL and migrate before the flow
    with prefect_api(runtime.settings):
        quiet_expected_errors()
        report: dict[str, Any] = getattr(evaluate_content, flow_name)(
            output=str(output), force=force, **parameters)
    return report


def shown_metrics(report: dict[str, Any], dataset: Path) -> dict[str, Any]:
    """The report's overall metrics as the console shows them: a metric over no case
    (its cases known from the dataset alone) reads ``n/a``, the report keeping its 0.0."""
    from ragplate.catalog.datasets import ApplicationContentDataset
    from ragplate.tasks.evaluation.application_content import outcome
    from ragplate.tasks.evaluation.dataset_files import read_dataset
    from ragplate.tasks.evaluation.pages import shown
    from ragplate.tasks.evaluation.scoring import measured

    cases = read_dataset(dataset, ApplicationContentDataset).data.cases
    return shown(report["metrics"], measured([outcome(case, ()) for case in cases]))


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
    report = run_flow(output, force, "evaluate_application_content", source=source,
                  dataset=str(dataset), mode=mode.value)
    if json_output:
        print_json(report)
        return
    _metrics_table(f"{report['source']} ({report['search']['mode']})",
                   [*shown_metrics(report, dataset).items(),
                    *((f"latency {k} ms", v) for k, v in report["latency_ms"].items())])
    console.print(f"Report: {output} (HTML: {output.with_suffix('.html')})", highlight=False)


def warn_idle_reranker(block: dict[str, Any]) -> None:
    from ragplate.tasks.evaluation.strategies import reranker_warning

    warning = reranker_warning(block)
    if warning:  # stderr: a --json report on stdout stays parseable
        make_console(stderr=True).print(f"[yellow]Warning:[/yellow] {escape(warning)}",
                                   highlight=False, soft_wrap=True)


def strategies(source: Source = "cms.contents", *, dataset: Dataset, output: Output,
               force: Force = False, json_output: JsonOutput = False) -> None:
    """Score each ordering (keyword, vector, hybrid, fused, reranked) through the Prefect
    flow [bold]evaluate-retrieval-strategies[/bold]; warns when the reranker did not run.

    Example: ragplate evaluate strategies --source cms.contents --dataset
    datasets/application-content-fixture.json --output reports/strategies.json
    """
    report = run_flow(output, force, "evaluate_retrieval_strategies", source=source,
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
        model = f", model {reranker['model']}" if reranker.get("model") else ""
        console.print(f"reranker: {reranker['status']} ({reranker['ran']} of "
                      f"{reranker['requested']}){model}", highlight=False)
        console.print(f"Report: {output} (HTML: {output.with_suffix('.html')})",
                      highlight=False)
    warn_idle_reranker(report["reranker"])


def register(group: typer.Typer) -> None:
    """Attach ``application-content`` and ``strategies`` to the ``evaluate`` group."""
    group.command("application-content")(application_content)
    group.command("strategies")(strategies)

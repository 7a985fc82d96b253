"""``ragplate evaluate assistant``: the Level-1 assistant evaluation."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from ragplate.cli.output import console, print_json, quiet_expected_errors


def assistant(
    dataset: Annotated[Path, typer.Option(help="Assistant dataset (JSON, the laraplate "
                                          "assistant-*.json format).")],
    output: Annotated[Path, typer.Option(help="Report file to write (JSON; the HTML page "
                                         "goes beside it).")],
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing report.")] = False,
    corpus: Annotated[Path | None, typer.Option(
        help="The fixture documentation the cases are answered from (default "
             "datasets/fixtures/assistant).")] = None,
    json_output: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """Score the assistant's answer path on a dataset (Level 1: the real guardrails, scope,
    retrieval over a fixture corpus, output policy, with a scripted model; nothing is
    stored) through the Prefect flow [bold]evaluate-assistant[/bold].

    Examples:

        ragplate evaluate assistant --dataset datasets/assistant-fixture.json --output
        reports/assistant.json

        ragplate evaluate assistant --dataset
        ../shared/benchmarks/laraplate/assistant-injection.json --output
        reports/injection.json --force
    """
    from ragplate.catalog.assistant_datasets import AssistantDataset
    from ragplate.tasks.evaluation.dataset_files import read_dataset
    from ragplate.tasks.evaluation.reports import check_output

    check_output(output, force=force, inputs=[dataset])  # refuse before starting any service
    read_dataset(dataset, AssistantDataset)
    if corpus is not None and not corpus.is_dir():
        from ragplate.catalog.errors import InvalidInputError

        raise InvalidInputError(f"--corpus {corpus}: not a directory")
    from ragplate.infra.environment import get_settings
    from ragplate.infra.prefect_server import prefect_api

    with prefect_api(get_settings()):
        from ragplate.flows.evaluate_assistant import evaluate_assistant

        quiet_expected_errors()
        report = evaluate_assistant(dataset=str(dataset), output=str(output), force=force,
                                    corpus=str(corpus) if corpus else None)
    if json_output:
        print_json(report)
        return
    console.print(metrics_table(report))
    console.print(f"Report: {output} (HTML: {output.with_suffix('.html')})", highlight=False)


def register(group: typer.Typer) -> None:
    """Attach ``assistant`` to the ``evaluate`` group."""
    group.command("assistant")(assistant)


def metrics_table(report: dict[str, Any]) -> Table:
    """The report's metrics as the console shows them: a metric no case measures reads
    ``n/a``, not a failing-looking 0.0 (the JSON report keeps its value)."""
    table = Table(title=f"assistant / {report['module']} (Level 1, {report['case_count']} "
                        "cases)")
    table.add_column("metric")
    table.add_column("value", justify="right")
    table.add_column("cases", justify="right")
    for key, value in report["metrics"].items():
        measured = report["measured"][key]
        table.add_row(key, str(value) if measured else "n/a", str(measured))
    return table

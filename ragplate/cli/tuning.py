"""``ragplate tune-retrieval`` (fusion tuning of application search; the options and the
flow runner are the application-content evaluation's) and ``ragplate tune-floor`` (the
documentation similarity floor), each through its Prefect flow."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from ragplate.cli.evaluate import IndexName, Retrieval
from ragplate.cli.evaluate_content import (
    Dataset,
    Force,
    JsonOutput,
    Output,
    Source,
    run_flow,
    warn_idle_reranker,
)
from ragplate.cli.numbers import fraction
from ragplate.cli.output import console, print_json, quiet_expected_errors


def tune_retrieval(
    source: Source = "cms.contents", *, dataset: Dataset, output: Output, force: Force = False,
    grid: Annotated[str, typer.Option(help="default (108 candidates) or a JSON file holding "
                                      "a list of parameter sets.")] = "default",
    metric: Annotated[str, typer.Option(help="The metric candidates are ranked by.")] = (
        "ndcg_at_5"),
    holdout: Annotated[float, typer.Option(
        parser=fraction(0.0, 0.99), metavar="FLOAT",
        help="Share of the cases kept out of the selection, from 0 to 0.99 (0 disables).")] = 0.3,
    min_class_cases: Annotated[int, typer.Option(min=1, help="Fewest selection cases for a "
                                                 "class override.")] = 8,
    class_margin: Annotated[float, typer.Option(
        parser=fraction(), metavar="FLOAT",
        help="Gain over the overall winner a class override needs, from 0 to 1.")] = 0.01,
    noise_margin: Annotated[str, typer.Option(help="auto (one case: 1 / selection cases, at "
                                              "least 0.01), a number from 0 to 1, or 0 (off)."
                                              )] = "auto",
    json_output: JsonOutput = False,
) -> None:
    """Tune application search's fusion through the Prefect flow [bold]tune-retrieval[/bold].

    Records each case's rankings once, re-fuses them for every candidate, validates on
    held-out cases and prints the ready-to-paste profile block.

    Example: ragplate tune-retrieval --source cms.contents --dataset ~/private/cms.json
    --output reports/tuning.json --holdout 0.3
    """
    from ragplate.tasks.tuning.grid import load_grid
    from ragplate.tasks.tuning.pages import paste_block
    from ragplate.tasks.tuning.tuner import Safeguards, parse_noise_margin

    margin = parse_noise_margin(noise_margin)
    Safeguards(metric=metric, holdout=holdout, min_class_cases=min_class_cases,
               class_margin=class_margin, noise_margin=margin)
    load_grid(grid)  # refuse a bad grid before anything starts
    report = run_flow(output, force, "tune_retrieval", source=source, dataset=str(dataset),
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
    warn_idle_reranker(report["reranked"]["reranker"])


def tune_floor(
    index: Annotated[IndexName, typer.Option(help="The index the dataset targets.")],
    dataset: Annotated[Path, typer.Option(help="Documentation dataset (JSON) with no-answer "
                                          "cases (expect_refusal).")],
    holdout: Annotated[float, typer.Option(
        parser=fraction(0.0, 0.99), metavar="FLOAT",
        help="Share of the cases kept out of the choice, from 0 to 0.99 (0 disables).")] = 0.3,
    max_lost: Annotated[int, typer.Option(min=0, help="Answered cases the floor may drop out "
                                          "of the top 5.")] = 0,
    retrieval: Annotated[Retrieval | None, typer.Option(
        help="vector, hybrid or adaptive (default: RAGPLATE_DOCS_RETRIEVAL).")] = None,
    json_output: JsonOutput = False,
) -> None:
    """Measure the similarity floor through the Prefect flow [bold]tune-floor[/bold].

    The RAGPLATE_MIN_SIMILARITY of best refusal accuracy on the no-answer cases that keeps
    hit@5 on the answered ones, checked on held-out cases; prints the value to set.

    Example: ragplate tune-floor --index developer --dataset
    datasets/documentation-laraplate-dev.json
    """
    from ragplate.catalog.datasets import DocumentationDataset
    from ragplate.catalog.errors import FloorNotMeasurableError
    from ragplate.infra.environment import get_settings
    from ragplate.infra.prefect_server import prefect_api
    from ragplate.infra.runtime import Runtime
    from ragplate.tasks.evaluation.dataset_files import read_dataset
    from ragplate.tasks.evaluation.documentation import check_index
    from ragplate.tasks.tuning.floor import check_dataset

    data = read_dataset(dataset, DocumentationDataset).data
    check_index(data, index.value)
    # Before any service: a dataset lacking either kind of case measures no floor.
    check_dataset(data, str(dataset))
    runtime = Runtime(get_settings())
    runtime.engine  # noqa: B018 - start PostgreSQL and migrate before the flow
    with prefect_api(runtime.settings):
        from ragplate.flows.tune_floor import tune_floor as flow

        quiet_expected_errors()
        try:
            result = flow(index=index.value, dataset=str(dataset), holdout=holdout,
                          max_lost=max_lost, strategy=retrieval.value if retrieval else None)
        except FloorNotMeasurableError as exc:
            # The figures say why; the error then exits 2 with no value to set.
            if exc.result is not None:
                _print_floor(exc.result, json_output, error=str(exc))
            raise
    _print_floor(result, json_output)


def _print_floor(result: dict[str, Any], json_output: bool, error: str | None = None) -> None:
    if json_output:
        print_json(result if error is None else {**result, "error": error})
        return
    from ragplate.tasks.tuning.floor import summary

    console.print(summary(result), markup=False, highlight=False, soft_wrap=True)


def register(app: typer.Typer) -> None:
    """Attach ``tune-retrieval`` and ``tune-floor`` to the root app."""
    app.command("tune-retrieval")(tune_retrieval)
    app.command("tune-floor")(tune_floor)

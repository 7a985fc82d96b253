"""``ragplate evaluate …``: retrieval evaluation against graded datasets."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from ragplate.catalog.errors import InvalidInputError
from ragplate.cli import evaluate_assistant, evaluate_content
from ragplate.cli.numbers import fraction
from ragplate.cli.output import console, examples, print_json, quiet_expected_errors


class IndexName(StrEnum):
    developer = "developer"
    user = "user"


class Mode(StrEnum):
    deterministic = "deterministic"
    live = "live"


class Retrieval(StrEnum):
    vector = "vector"
    hybrid = "hybrid"
    adaptive = "adaptive"


def documentation(
    index: Annotated[IndexName, typer.Option(help="The index the dataset targets.")],
    dataset: Annotated[Path, typer.Option(help="Dataset file (JSON, the laraplate format).")],
    output: Annotated[Path, typer.Option(help="Report file to write (JSON; the HTML page "
                                         "goes beside it).")],
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing report.")] = False,
    mode: Annotated[Mode, typer.Option(help="live: the real index; deterministic: the "
                                       "committed fixture corpus (Level 1, CI).")] = Mode.live,
    retrieval: Annotated[Retrieval | None, typer.Option(
        help="vector, hybrid or adaptive (default: RAGPLATE_DOCS_RETRIEVAL).")] = None,
    corpus: Annotated[Path | None, typer.Option(
        help="Deterministic mode: the fixture corpus (default datasets/fixtures/documentation)."
    )] = None,
    cases: Annotated[Path | None, typer.Option(
        "--cases", help="Also write each case's expected labels, returned labels and first "
        "relevant rank to this JSON file (refused for a private dataset).")] = None,
    min_hit_at_5: Annotated[float | None, typer.Option(
        "--min-hit-at-5", parser=fraction(), metavar="FLOAT",
        help="Exit 1 (after writing the report) when hit@5 is below this figure (0 to 1).")] = None,
    min_mrr: Annotated[float | None, typer.Option(
        "--min-mrr", parser=fraction(), metavar="FLOAT",
        help="Exit 1 (after writing the report) when MRR is below this figure (0 to 1).")] = None,
    json_output: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """Score documentation retrieval on a dataset through the Prefect flow
    [bold]evaluate-documentation[/bold] and write the report; the HTML page lists the
    failing cases.

    Examples:

        ragplate evaluate documentation --index developer --dataset
        ../shared/benchmarks/laraplate/2026-09-18-developer-retrieval.json --output
        reports/developer-retrieval.json --retrieval hybrid --cases reports/cases.json

        ragplate evaluate documentation --index developer --dataset
        datasets/switch-gate-docs.json --output reports/gate.json --min-hit-at-5 0.9
        --min-mrr 0.8
    """
    from ragplate.tasks.evaluation.reports import check_extra_output, check_output

    check_output(output, force=force, inputs=[dataset])  # refuse before starting any service
    if cases is not None:
        check_extra_output(cases, option="--cases", report=output, force=force,
                           inputs=[dataset])
    if corpus is not None and mode is not Mode.deterministic:
        raise InvalidInputError("--corpus is only for --mode deterministic")
    from ragplate.catalog.datasets import DocumentationDataset
    from ragplate.tasks.evaluation.cases import (
        Thresholds,
        refuse_private_cases,
        refuse_unmeasurable,
    )
    from ragplate.tasks.evaluation.dataset_files import read_dataset
    from ragplate.tasks.evaluation.documentation import check_index

    loaded = read_dataset(dataset, DocumentationDataset).data
    check_index(loaded, index.value)
    refuse_private_cases(loaded, str(cases) if cases else None)
    refuse_unmeasurable(Thresholds(min_hit_at_5=min_hit_at_5, min_mrr=min_mrr), loaded)
    from ragplate.infra.environment import get_settings
    from ragplate.infra.prefect_server import prefect_api
    from ragplate.infra.runtime import Runtime

    runtime = Runtime(get_settings())
    if mode is Mode.live:
        runtime.engine  # noqa: B018 - start PostgreSQL and migrate before the flow
    from ragplate.catalog.errors import BelowThresholdError

    with prefect_api(runtime.settings):
        from ragplate.flows.evaluate_documentation import evaluate_documentation
        quiet_expected_errors()

        try:
            report = evaluate_documentation(
                index=index.value, dataset=str(dataset), output=str(output), force=force,
                mode=mode.value, strategy=retrieval.value if retrieval else None,
                corpus=str(corpus) if corpus else None,
                cases_output=str(cases) if cases else None,
                min_hit_at_5=min_hit_at_5, min_mrr=min_mrr)
        except BelowThresholdError as exc:
            # The report is written: --json still prints it, with the thresholds missed,
            # before the error exits 1.
            if json_output and exc.report is not None:
                print_json({**exc.report, "thresholds_failed": exc.failed})
            raise
    if json_output:
        print_json(report)
        return
    from ragplate.tasks.evaluation.documentation import measured_cases

    _print(report, output, measured_cases(loaded))


class CheckKind(StrEnum):
    documentation = "documentation"
    application_content = "application-content"


def check(
    file: Annotated[Path, typer.Argument(help="A dataset or report (JSON), documentation or "
                                         "application content.")],
    kind: Annotated[CheckKind | None, typer.Option(
        help="The file's kind (default: read from its shape: index_profile and cases with "
             "expected_source_labels for documentation, source and cases with "
             "expected_hit_ids for application content); for a file showing both or "
             "neither, since one showing the other kind alone is refused.")] = None,
    json_output: Annotated[bool, typer.Option(
        "--json", help="Print the outcome as JSON on stdout, failed or not (the exit code "
                       "is the same).")] = False,
) -> None:
    """Validate a dataset (caps, schema, expectation suite) or a report (expectation
    suite), documentation or application content; print which expectation failed.

    Examples:

        ragplate evaluate check datasets/application-content-fixture.json

        ragplate evaluate check reports/evaluations/weekly.json --json
    """
    from ragplate.tasks.evaluation.expectations import ExpectationsFailed
    from ragplate.tasks.evaluation.file_check import check_file

    try:
        result = check_file(file, None if kind is None else
                            "documentation" if kind is CheckKind.documentation
                            else "application_content")
    except InvalidInputError as exc:
        if not json_output:
            raise
        failed = exc if isinstance(exc, ExpectationsFailed) else None
        print_json({"file": str(file), "passed": False, "error": str(exc),
                    "suite": failed.suite if failed else None,
                    "failures": failed.failures if failed else []})
        raise typer.Exit(exc.exit_code) from None
    if json_output:
        print_json(result.as_dict())
        return
    validation = result.validation
    console.print(f"{file}: suite {validation.suite} passed ({validation.expectations} "
                  f"expectations, {validation.rows} rows)", highlight=False, soft_wrap=True)


def _print(report: dict[str, Any], output: Path, measured: dict[str, int] | None = None
           ) -> None:
    """The overall metrics and latency; a metric ``measured`` says no case measures reads
    ``n/a`` (the report keeps its 0.0)."""
    from ragplate.tasks.evaluation.pages import shown

    table = Table(title=f"{report['module']} / {report['index_profile']} "
                        f"({report['retrieval']['mode']}, {report['retrieval']['strategy']})")
    table.add_column("metric")
    table.add_column("value", justify="right")
    for key, value in shown(report["metrics"], measured).items():
        table.add_row(key, str(value))
    for key, value in report["latency_ms"].items():
        table.add_row(f"latency {key} ms", str(value))
    console.print(table)
    console.print(f"Report: {output} (HTML: {output.with_suffix('.html')})", highlight=False)


def register(app: typer.Typer) -> None:
    """Attach the ``evaluate`` group: ``documentation`` and ``check`` here,
    ``application-content`` and ``strategies`` from :mod:`ragplate.cli.evaluate_content`,
    ``assistant`` from :mod:`ragplate.cli.evaluate_assistant`."""
    group = typer.Typer(help="Evaluate retrieval against graded datasets; reports as JSON + "
                        "HTML.", no_args_is_help=True,
                        epilog=examples(
                            "ragplate evaluate documentation --index developer "
                            "--dataset datasets/documentation-laraplate-dev.json "
                            "--output reports/dev.json --min-mrr 0.8",
                            "ragplate evaluate check datasets/documentation-laraplate-dev.json",
                            "ragplate evaluate assistant --dataset datasets/assistant-fixture.json "
                            "--output reports/assistant.json"))
    group.command("documentation")(documentation)
    group.command("check")(check)
    evaluate_content.register(group)
    evaluate_assistant.register(group)
    app.add_typer(group, name="evaluate")

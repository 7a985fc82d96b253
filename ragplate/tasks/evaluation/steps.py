"""Thin Prefect ``@task`` wrappers of the evaluation steps: documentation
(:mod:`.documentation`), application content and strategies (:mod:`.application_content`,
:mod:`.strategies`), their datasets, expectation suites and reports. Nothing here retries:
a refused dataset or report is refused again, and a retrieval or search failure is already
a measured outcome."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from prefect import get_run_logger, task
from prefect.cache_policies import NO_CACHE

from ragplate.catalog.datasets import ApplicationContentDataset, DocumentationDataset
from ragplate.catalog.errors import InvalidInputError
from ragplate.catalog.settings import DocsRetrieval
from ragplate.infra.runtime import Runtime
from ragplate.tasks.evaluation import (
    application_content,
    cases,
    documentation,
    expectations,
    reports,
    strategies,
)
from ragplate.tasks.evaluation.dataset_files import LoadedDataset, read_dataset
from ragplate.tasks.evaluation.scoring import CaseOutcome
from ragplate.tasks.retrieval.strategy import Mode, configured_reranker

Setup = Literal["live", "deterministic"]
SETUPS: tuple[Setup, ...] = ("live", "deterministic")
ReportKind = Literal["documentation", "application_content", "strategies", "tuning"]

#: The suite that checks each kind of report.
REPORT_SUITES = {
    "documentation": expectations.validate_documentation_report,
    "application_content": expectations.validate_application_content_report,
    "strategies": expectations.validate_strategies_report,
    "tuning": expectations.validate_tuning_report,
}


@task(name="check-report-output", cache_policy=NO_CACHE)
def check_output(output: str, force: bool, dataset: str | None = None, *,
                 grid: str | None = None) -> Path:
    """Refuse an existing report (without ``force``), an unwritable directory, or the
    path of the dataset or of the ``--grid`` file the run reads."""
    return reports.check_output(output, force=force, inputs=[dataset] if dataset else [],
                                also_reads={"the --grid file": grid} if grid else None)


@task(name="check-cases-output", cache_policy=NO_CACHE)
def check_cases_output(path: str, report: Path, force: bool, dataset: str | None = None
                       ) -> Path:
    """Refuse an existing per-case file (without ``force``), an unwritable directory, the
    report's own path or page, or the dataset's path."""
    return reports.check_extra_output(path, option="--cases", report=report, force=force,
                                      inputs=[dataset] if dataset else [])


@task(name="load-dataset", cache_policy=NO_CACHE)
def load_documentation_dataset(path: str, index: str) -> LoadedDataset[DocumentationDataset]:
    """Read the dataset with the shared caps and check it targets ``index``."""
    loaded = read_dataset(path, DocumentationDataset)
    documentation.check_index(loaded.data, index)
    return loaded


@task(name="load-dataset", cache_policy=NO_CACHE)
def load_content_dataset(runtime: Runtime, path: str,
                         source: str) -> LoadedDataset[ApplicationContentDataset]:
    """Read the dataset with the shared caps; it must target ``source`` and ask only for
    what the search enforces."""
    loaded = read_dataset(path, ApplicationContentDataset)
    application_content.check_dataset(loaded.data, source, runtime.settings,
                                      where=loaded.path)
    return loaded


@task(name="validate-dataset", cache_policy=NO_CACHE)
def validate_dataset(loaded: LoadedDataset[Any]) -> expectations.Validation:
    """The committed Great Expectations suite of the dataset's kind over its cases; a
    failure names the dataset file."""
    with expectations.naming(loaded.path):
        if isinstance(loaded.data, DocumentationDataset):
            return expectations.validate_documentation_dataset(loaded.data)
        return expectations.validate_application_content_dataset(loaded.data)


@task(name="prepare-retrieval", cache_policy=NO_CACHE)
def prepare_retrieval(runtime: Runtime, index: Literal["developer", "user"],
                      mode: documentation.Mode, strategy: DocsRetrieval,
                      corpus: str | None) -> documentation.RetrievalSetup:
    """Live: the configured index of the active profile. Deterministic: the fixture
    corpus indexed into the in-memory store."""
    if mode == "live":
        return documentation.live_setup(runtime, index, strategy=strategy)
    root = Path(corpus) if corpus else documentation.FIXTURE_CORPUS
    return documentation.fixture_setup(index, strategy=strategy, corpus=root)


@task(name="check-expected-labels", cache_policy=NO_CACHE)
def warn_absent_labels(dataset: DocumentationDataset,
                       setup: documentation.RetrievalSetup) -> list[str]:
    """Warn (in the run's logs and on the console) about expected labels the index does
    not hold; returns them."""
    absent = documentation.absent_labels(dataset, setup)
    if absent:
        get_run_logger().warning(
            "%d expected source label(s) of the dataset are not in the %s index, so their "
            "cases can only score through other labels: %s", len(absent), setup.index,
            named(absent, dataset.data_classification))
    return absent


#: The first labels for a log line, or a word that a private dataset's are withheld.
named = documentation.named


@task(name="run-cases", cache_policy=NO_CACHE)
def run_documentation_cases(dataset: DocumentationDataset,
                            setup: documentation.RetrievalSetup) -> list[CaseOutcome]:
    """Answer every case through the real retrieval path."""
    return documentation.run_cases(dataset, documentation.case_retriever(setup),
                                   timed=setup.mode == "live")


@task(name="prepare-search", cache_policy=NO_CACHE)
def prepare_search(runtime: Runtime, setup: Setup,
                   source: str) -> application_content.ContentSetup:
    """Live: the configured database, serving profile and reranker. Deterministic: the
    seeded fixture corpus searched with the fixture profile (and the configured reranker).
    Either way ``source`` must hold records to search."""
    if setup == "live":
        prepared = application_content.live_setup(runtime)
        application_content.require_texts(prepared, source)
        return prepared
    return application_content.fixture_setup(runtime.engine, runtime.settings,
                                             configured_reranker(runtime.settings))


@task(name="check-expected-ids", cache_policy=NO_CACHE)
def warn_absent_hit_ids(dataset: ApplicationContentDataset,
                        setup: application_content.ContentSetup) -> list[str]:
    """Warn (in the run's logs and on the console) about expected hit ids whose record the
    source does not hold as searchable; returns them."""
    absent = application_content.absent_hit_ids(dataset, setup)
    if absent:
        get_run_logger().warning(
            "%d expected hit id(s) of the dataset are not searchable records of %s, so "
            "their cases can only score through other ids: %s", len(absent), dataset.source,
            named(absent, dataset.data_classification))
    return absent


@task(name="run-cases", cache_policy=NO_CACHE)
def run_content_cases(dataset: ApplicationContentDataset,
                      setup: application_content.ContentSetup, mode: Mode,
                      ) -> tuple[list[CaseOutcome], application_content.ServedSummary]:
    """Answer every case through application search."""
    return application_content.run_cases(dataset, setup, mode)


@task(name="record-rankings", cache_policy=NO_CACHE)
def record_rankings(dataset: ApplicationContentDataset,
                    setup: application_content.ContentSetup) -> list[strategies.RecordedCase]:
    """Each scored case's per-strategy rankings, reranker off and on."""
    return strategies.record_cases(dataset, setup)


@task(name="measure-context", cache_policy=NO_CACHE)
def measure_context(loaded: LoadedDataset[ApplicationContentDataset],
                    setup: application_content.ContentSetup) -> dict[str, Any]:
    """Embedding profile, corpus size and dataset hash of the run."""
    return application_content.context(loaded, setup)


@task(name="validate-report", cache_policy=NO_CACHE)
def validate_report(report: dict[str, Any], kind: ReportKind,
                    output: Path) -> expectations.Validation:
    """The committed suite of ``kind`` over the report's figures (before it is written); a
    failure names the report's ``--output``."""
    with expectations.naming(f"report {output}"):
        return REPORT_SUITES[kind](report)


@task(name="write-report", cache_policy=NO_CACHE)
def write_report(output: Path, report: dict[str, Any], force: bool, html: str) -> Path:
    """The JSON report (atomic) and its HTML page beside it."""
    return reports.write_report(output, report, force=force, html=html)


@task(name="write-cases", cache_policy=NO_CACHE)
def write_cases(path: str, document: dict[str, Any], force: bool) -> Path:
    """The per-case file (``--cases``), atomically; refused like a report when it exists
    without ``force``."""
    target = reports.check_output(path, force=force, option="--cases", page=False)
    reports.assert_no_content(document, "cases")
    try:
        reports.write_atomic(target, reports.render_json(document))
    except OSError as exc:
        raise InvalidInputError(f"--cases {target}: cannot write it "
                                f"({exc.strerror or exc})") from exc
    return target


@task(name="check-thresholds", cache_policy=NO_CACHE)
def check_thresholds(thresholds: cases.Thresholds, outcomes: list[CaseOutcome],
                     report: dict[str, Any], output: str) -> None:
    """Fail the run when a figure is below its threshold (the report is already written)."""
    cases.enforce(thresholds, outcomes, report, output)

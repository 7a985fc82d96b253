"""Thin Prefect ``@task`` wrappers of the evaluation steps (see ``evaluate_docs``,
``datasets``, ``expectations`` and ``reports``). Nothing here retries: a refused dataset or
report is refused again, and a retrieval failure is already a measured outcome."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from prefect import get_run_logger, task
from prefect.cache_policies import NO_CACHE

from ragplate.catalog.datasets import DocumentationDataset
from ragplate.catalog.settings import DocsRetrieval
from ragplate.infra.runtime import Runtime
from ragplate.tasks import evaluate_docs, expectations, reports
from ragplate.tasks.datasets import LoadedDataset, read_dataset
from ragplate.tasks.scoring import CaseOutcome


@task(name="check-report-output", cache_policy=NO_CACHE)
def check_output(output: str, force: bool) -> Path:
    """Refuse an existing report (without ``force``) or an unwritable directory."""
    return reports.check_output(output, force=force)


@task(name="load-dataset", cache_policy=NO_CACHE)
def load_documentation_dataset(path: str, index: str) -> LoadedDataset[DocumentationDataset]:
    """Read the dataset with the shared caps and check it targets ``index``."""
    loaded = read_dataset(path, DocumentationDataset)
    evaluate_docs.check_index(loaded.data, index)
    return loaded


@task(name="validate-dataset", cache_policy=NO_CACHE)
def validate_dataset(loaded: LoadedDataset[DocumentationDataset]) -> expectations.Validation:
    """The committed Great Expectations suite over the dataset's cases; a failure names
    the dataset file."""
    with expectations.naming(loaded.path):
        return expectations.validate_documentation_dataset(loaded.data)


@task(name="prepare-retrieval", cache_policy=NO_CACHE)
def prepare_retrieval(index: Literal["developer", "user"], mode: evaluate_docs.Mode,
                      strategy: DocsRetrieval, corpus: str | None) -> evaluate_docs.RetrievalSetup:
    """Live: the configured index of the active profile. Deterministic: the fixture
    corpus indexed into the in-memory store."""
    if mode == "live":
        return evaluate_docs.live_setup(Runtime(), index, strategy=strategy)
    root = Path(corpus) if corpus else evaluate_docs.FIXTURE_CORPUS
    return evaluate_docs.fixture_setup(index, strategy=strategy, corpus=root)


@task(name="check-expected-labels", cache_policy=NO_CACHE)
def warn_absent_labels(dataset: DocumentationDataset,
                       setup: evaluate_docs.RetrievalSetup) -> list[str]:
    """Warn (in the run's logs and on the console) about expected labels the index does
    not hold; returns them."""
    absent = evaluate_docs.absent_labels(dataset, setup)
    if absent:
        shown = ", ".join(absent[:10]) + (" …" if len(absent) > 10 else "")
        get_run_logger().warning(
            "%d expected source label(s) of the dataset are not in the %s index, so their "
            "cases can only score through other labels: %s", len(absent), setup.index, shown)
    return absent


@task(name="run-cases", cache_policy=NO_CACHE)
def run_cases(dataset: DocumentationDataset,
              setup: evaluate_docs.RetrievalSetup) -> list[CaseOutcome]:
    """Answer every case through the real retrieval path."""
    return evaluate_docs.run_cases(dataset, evaluate_docs.case_retriever(setup),
                                   timed=setup.mode == "live")


@task(name="validate-report", cache_policy=NO_CACHE)
def validate_report(report: dict[str, Any], output: Path) -> expectations.Validation:
    """The committed Great Expectations suite over the report's figures (before it is
    written); a failure names the report's ``--output``."""
    with expectations.naming(f"report {output}"):
        return expectations.validate_documentation_report(report)


@task(name="write-report", cache_policy=NO_CACHE)
def write_report(output: Path, report: dict[str, Any], force: bool, html: str) -> Path:
    """The JSON report (atomic) and its HTML page beside it."""
    return reports.write_report(output, report, force=force, html=html)

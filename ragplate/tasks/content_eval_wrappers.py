"""Thin Prefect ``@task`` wrappers of the application-content, strategies and tuning steps
(see ``content_eval``, ``strategy_eval``, ``tune_report`` and ``content_expectations``).
Nothing here retries: a refused dataset or report is refused again, and a search failure
is already a measured outcome."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from prefect import task
from prefect.cache_policies import NO_CACHE

from ragplate.catalog.datasets import ApplicationContentDataset
from ragplate.infra.runtime import Runtime
from ragplate.tasks import content_eval, content_expectations, expectations, strategy_eval
from ragplate.tasks.datasets import LoadedDataset, read_dataset

# The report I/O tasks are the documentation evaluation's, re-exported for the flows.
from ragplate.tasks.evaluation_wrappers import check_output as check_output
from ragplate.tasks.evaluation_wrappers import write_report as write_report
from ragplate.tasks.scoring import CaseOutcome
from ragplate.tasks.search_strategy import Mode

Setup = Literal["live", "deterministic"]
SETUPS: tuple[Setup, ...] = ("live", "deterministic")


@task(name="load-dataset", cache_policy=NO_CACHE)
def load_dataset(path: str, source: str) -> LoadedDataset[ApplicationContentDataset]:
    """Read the dataset with the shared caps; it must target ``source`` and ask only for
    what the search enforces."""
    loaded = read_dataset(path, ApplicationContentDataset)
    content_eval.check_dataset(loaded.data, source)
    return loaded


@task(name="validate-dataset", cache_policy=NO_CACHE)
def validate_dataset(loaded: LoadedDataset[ApplicationContentDataset],
                     ) -> expectations.Validation:
    """Part A's application-content-dataset suite over the cases; a failure names the
    dataset file."""
    with expectations.naming(loaded.path):
        return expectations.validate_application_content_dataset(loaded.data)


@task(name="prepare-search", cache_policy=NO_CACHE)
def prepare_search(setup: Setup, source: str) -> content_eval.ContentSetup:
    """Live: the configured database, serving profile and reranker. Deterministic: the
    seeded fixture corpus searched with the fixture profile (and the configured reranker).
    Either way ``source`` must hold records to search."""
    runtime = Runtime()
    if setup == "live":
        prepared = content_eval.live_setup(runtime)
        content_eval.require_texts(prepared, source)
        return prepared
    from ragplate.tasks.search_strategy import configured_reranker

    return content_eval.fixture_setup(runtime.engine, runtime.settings,
                                      configured_reranker(runtime.settings))


@task(name="run-cases", cache_policy=NO_CACHE)
def run_cases(dataset: ApplicationContentDataset, setup: content_eval.ContentSetup,
              mode: Mode) -> tuple[list[CaseOutcome], content_eval.ServedSummary]:
    """Answer every case through application search."""
    return content_eval.run_cases(dataset, setup, mode)


@task(name="record-rankings", cache_policy=NO_CACHE)
def record_rankings(dataset: ApplicationContentDataset,
                    setup: content_eval.ContentSetup) -> list[strategy_eval.RecordedCase]:
    """Each scored case's per-strategy rankings, reranker off and on."""
    return strategy_eval.record_cases(dataset, setup)


@task(name="measure-context", cache_policy=NO_CACHE)
def measure_context(loaded: LoadedDataset[ApplicationContentDataset],
                    setup: content_eval.ContentSetup) -> dict[str, Any]:
    """Embedding profile, corpus size and dataset hash of the run."""
    return content_eval.context(loaded, setup)


@task(name="validate-report", cache_policy=NO_CACHE)
def validate_report(report: dict[str, Any], kind: str, output: Path,
                    ) -> expectations.Validation:
    """The committed suite of ``kind`` (``application_content``, ``strategies`` or
    ``tuning``) over the report (before it is written); a failure names ``--output``."""
    check = {"application_content": content_expectations.validate_application_content_report,
             "strategies": content_expectations.validate_strategies_report,
             "tuning": content_expectations.validate_tuning_report}[kind]
    with expectations.naming(f"report {output}"):
        return check(report)


"""Thin Prefect ``@task`` wrappers of the Level-1 assistant evaluation
(:mod:`ragplate.tasks.evaluation.assistant`). Nothing retries: a refused dataset is refused
again, and a failing case is already a measured outcome."""

from __future__ import annotations

from pathlib import Path

from prefect import task
from prefect.cache_policies import NO_CACHE

from ragplate.catalog.assistant_datasets import AssistantDataset
from ragplate.infra.runtime import Runtime
from ragplate.tasks.evaluation import assistant
from ragplate.tasks.evaluation.assistant_fixtures import FixtureSources
from ragplate.tasks.evaluation.assistant_metrics import AssistantOutcome
from ragplate.tasks.evaluation.dataset_files import LoadedDataset, read_dataset


@task(name="load-dataset", cache_policy=NO_CACHE)
def load_dataset(path: str) -> LoadedDataset[AssistantDataset]:
    """Read the dataset with the shared caps and its exact schema."""
    return read_dataset(path, AssistantDataset)


@task(name="index-fixture-corpus", cache_policy=NO_CACHE)
def prepare_sources(runtime: Runtime, corpus: Path) -> FixtureSources:
    """The fixture corpus in an in-memory user index."""
    return assistant.fixture_sources(runtime, corpus)


@task(name="run-assistant-cases", cache_policy=NO_CACHE)
def run_cases(runtime: Runtime, dataset: AssistantDataset, sources: FixtureSources
              ) -> list[AssistantOutcome]:
    """Every case through the answer path with its scripted model."""
    return assistant.run_cases(runtime, dataset, sources)

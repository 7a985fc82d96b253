"""Thin Prefect ``@task`` wrappers of the tuning steps that are not the application-content
evaluation's. Nothing retries: a retrieval failure is a measured outcome elsewhere, and here
a refusal (no case to measure) is refused again."""

from __future__ import annotations

from typing import Any

from prefect import task
from prefect.cache_policies import NO_CACHE

from ragplate.catalog.datasets import DocumentationDataset
from ragplate.tasks.evaluation import documentation
from ragplate.tasks.tuning import floor


@task(name="check-floor-dataset", cache_policy=NO_CACHE)
def check_floor_dataset(dataset: DocumentationDataset, path: str) -> None:
    """Refuse, before retrieval starts, a dataset without no-answer cases or without
    answered ones: no floor can be measured on it."""
    floor.check_dataset(dataset, path)


@task(name="record-unfloored-hits", cache_policy=NO_CACHE)
def record_floor_cases(dataset: DocumentationDataset,
                       setup: documentation.RetrievalSetup) -> list[floor.FloorCase]:
    """Every case's hits and similarities, without a floor."""
    return floor.record(dataset, documentation.unfloored_hits(setup))


@task(name="choose-floor", cache_policy=NO_CACHE)
def choose_floor(cases: list[floor.FloorCase], holdout: float, max_lost: int) -> dict[str, Any]:
    """The floor chosen on the selection part and checked on the hold-out part."""
    return floor.tune_floor(cases, holdout=holdout, max_lost=max_lost)


@task(name="check-floor-measured", cache_policy=NO_CACHE)
def check_floor_measured(result: dict[str, Any], index: str, dataset: str) -> None:
    """Fail the run when the dataset does not fit the index (no floor can be measured)."""
    floor.check_measured(result, index=index, dataset=dataset)

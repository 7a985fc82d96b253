"""``tune-floor``: measure the similarity floor on a documentation dataset's no-answer
cases (see :mod:`ragplate.tasks.tuning.floor`)."""

from __future__ import annotations

from typing import Any, Literal

from prefect import flow
from prefect.artifacts import create_markdown_artifact

from ragplate.catalog.errors import InvalidInputError
from ragplate.catalog.settings import DocsRetrieval
from ragplate.infra.environment import get_settings
from ragplate.infra.runtime import Runtime
from ragplate.infra.worker_watch import watch_worker
from ragplate.tasks.evaluation import steps as evaluation
from ragplate.tasks.flow_runs import crash_gone
from ragplate.tasks.retrieval.documentation import STRATEGIES
from ragplate.tasks.tuning import steps
from ragplate.tasks.tuning.floor import log_line, summary


@flow(name="tune-floor", log_prints=True)
def tune_floor(
    index: Literal["developer", "user"],
    dataset: str,
    holdout: float = 0.3,
    max_lost: int = 0,
    strategy: DocsRetrieval | None = None,
) -> dict[str, Any]:
    """Answer every case of ``dataset`` on the live ``index`` without a floor, choose the
    floor of best refusal accuracy that keeps hit@5, check it on the held-out cases. Warns
    about expected labels the index lacks; fails (after the summary artifact) when no
    answered case has a hit without a floor, since then no floor can be measured."""
    watch_worker()  # this run ends with the worker that started it
    crash_gone()
    runtime = Runtime(get_settings())
    chosen: DocsRetrieval = strategy or runtime.settings.docs_retrieval
    if chosen not in STRATEGIES:
        raise InvalidInputError(f"--retrieval {chosen!r}: expected one of {', '.join(STRATEGIES)}")
    loaded = evaluation.load_documentation_dataset(dataset, index)
    evaluation.validate_dataset(loaded)
    steps.check_floor_dataset(loaded.data, dataset)
    setup = evaluation.prepare_retrieval(runtime, index, "live", chosen, None)
    absent = evaluation.warn_absent_labels(loaded.data, setup)
    cases = steps.record_floor_cases(loaded.data, setup)
    result = steps.choose_floor(cases, holdout, max_lost)
    result = {"index": index, "strategy": chosen, "model": setup.embedder.profile.key,
              "dataset": {"sha256": loaded.sha256}, "absent_labels": len(absent), **result}
    create_markdown_artifact(summary(result), key="tune-floor", description="tune-floor")
    print(log_line(result))
    steps.check_floor_measured(result, index, dataset)
    return result

"""The ``tune-retrieval`` report: the tuning keys of :func:`ragplate.tasks.tuning.tuner.tune`
framed by the run's identity and the context it was measured in.

Keys, in order: ``version``, ``source``, ``dataset`` (version, corpus revision,
classification, case count, ``sha256``), ``driver``, ``grid``, then ``metric`` …
``class_winners_skipped`` from the tuner, then ``embedding`` and ``corpus``. Metrics and
parameters only: no query text, no case id, no content, so a report of a private dataset
can be committed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ragplate.catalog.datasets import ApplicationContentDataset
from ragplate.catalog.search_tuning import ParamSet, TuningProfile
from ragplate.tasks.evaluation.dataset_files import LoadedDataset
from ragplate.tasks.evaluation.strategies import RecordedCase
from ragplate.tasks.tuning.tuner import REPORT_VERSION, Safeguards, tune


def build_report(loaded: LoadedDataset[ApplicationContentDataset],
                 recorded: Sequence[RecordedCase], *, grid_name: str, grid: Sequence[ParamSet],
                 committed: TuningProfile, guards: Safeguards, driver: str,
                 context: dict[str, Any]) -> dict[str, Any]:
    """Tune ``grid`` on ``recorded`` and assemble the report (see the module docstring);
    ``context`` is :func:`ragplate.tasks.evaluation.application_content.context`."""
    dataset = loaded.data
    return {
        "version": REPORT_VERSION,
        "source": dataset.source,
        "dataset": {"version": dataset.version, "corpus_revision": dataset.corpus_revision,
                    "data_classification": dataset.data_classification,
                    "cases": len(dataset.cases), **context["dataset"]},
        "driver": driver,
        "grid": {"name": grid_name, "candidates": len(grid)},
        **tune(recorded, grid, committed, guards),
        "embedding": context["embedding"],
        "corpus": context["corpus"],
    }


def report_title(report: dict[str, Any]) -> str:
    """The title of a tuning report's page and artifacts."""
    return (f"tune-retrieval: {report['source']} ({report['driver']}, {report['metric']}, "
            f"grid {report['grid']['name']})")

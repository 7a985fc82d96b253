"""Great Expectations checks of dataset files and reports, with suites committed in
``ragplate/catalog/expectations/*.json``.

A dataset or a report is turned into a small table (one row per case, or one row per
figure) and validated against its suite in an ephemeral, offline context (analytics off,
no progress bars, nothing written to disk). Great Expectations is imported only here and
only when a validation runs: the import alone costs seconds. A failed validation raises
:class:`ExpectationsFailed` naming every expectation that failed, with its column and a few
unexpected values (ids, locales, counts: never query text).

The application-content, strategies and tuning reports become the same kind of table
(one row per figure, or per scored parameter set) with consistency flags computed here, so
a suite can say in one line what must hold: the reranker's status agrees with its counts, a
tuning report has a winner exactly when its outcome accepted one, candidates are sorted by
the metric.
"""

from __future__ import annotations

import itertools
import json
import logging
import os
import re
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import pandas as pd

from ragplate.catalog.datasets import ApplicationContentDataset, DocumentationDataset
from ragplate.catalog.errors import InvalidInputError

log = logging.getLogger(__name__)

SUITES_DIR = Path(__file__).resolve().parents[2] / "catalog" / "expectations"
_lock = threading.Lock()
_names = itertools.count(1)


class ExpectationsFailed(InvalidInputError):
    """A dataset or report failed its expectation suite; ``failures`` say which and
    ``where`` (when known) names the file or report."""

    def __init__(self, suite: str, failures: list[str], where: str | None = None) -> None:
        prefix = f"{where}: " if where else ""
        super().__init__(f"{prefix}expectation suite '{suite}' failed: " + "; ".join(failures))
        self.suite = suite
        self.failures = failures
        self.where = where

    def at(self, where: str | Path) -> ExpectationsFailed:
        """The same failure, naming ``where``."""
        return ExpectationsFailed(self.suite, self.failures, str(where))

    def __reduce__(self) -> tuple[Any, ...]:
        return (self.__class__, (self.suite, self.failures, self.where))


@contextmanager
def naming(where: str | Path) -> Iterator[None]:
    """Expectation failures raised inside the block name ``where``: the suite alone does
    not tell an operator which of several files failed."""
    try:
        yield
    except ExpectationsFailed as exc:
        raise exc.at(where) from None


@dataclass(frozen=True)
class Validation:
    """A passed validation: the suite and how many expectations it checked."""

    suite: str
    expectations: int
    rows: int


def documentation_dataset_frame(dataset: DocumentationDataset) -> pd.DataFrame:
    """One row per case: identity, sizes and consistency flags (no query text)."""
    return pd.DataFrame([{
        "id": c.id, "locale": c.locale, "query_chars": len(c.query), "top_k": c.top_k,
        "expected_labels": len(c.expected_source_labels),
        # What the case scores: expected labels, or an empty answer (a dataset of no-answer
        # questions measures abstention alone); a dataset where no case expects either
        # scores nothing.
        "expects_outcome": int(bool(c.expected_source_labels) or c.expect_refusal
                               or c.expect_authorized_empty),
        "empty_consistent": not ((c.expect_refusal or c.expect_authorized_empty)
                                 and (c.expected_source_labels or c.expected_citation_labels)),
        "tenant_consistent": (c.tenant_scope == "global") == (c.tenant_id is None),
        "data_classification": dataset.data_classification,
        "index_profile": dataset.index_profile,
    } for c in dataset.cases])


def application_content_dataset_frame(dataset: ApplicationContentDataset) -> pd.DataFrame:
    """One row per case of an application-content dataset (no query text)."""
    prefix = f"{dataset.source}:"
    return pd.DataFrame([{
        "id": c.id, "locale": c.locale, "query_chars": len(c.query), "limit": c.limit,
        "expected_hits": len(c.expected_hit_ids),
        "hit_ids_prefixed": all(h.startswith(prefix)
                                for h in [*c.expected_hit_ids, *c.expected_citation_ids]),
        "empty_consistent": not ((c.expect_abstention or c.expect_authorized_empty)
                                 and (c.expected_hit_ids or c.expected_citation_ids)),
        "data_classification": dataset.data_classification,
    } for c in dataset.cases])


def report_frame(report: Mapping[str, Any]) -> pd.DataFrame:
    """One row per figure of a metric report: ``scope`` (overall, locale, category,
    latency), ``slice``, ``metric``, ``value``, ``ratio`` (metrics) or ``milliseconds``
    (latency), ``value_text`` (how the JSON writes it) and the header fields."""
    header = {key: report.get(key) for key in
              ("schema_version", "index_profile", "data_classification", "case_count")}
    rows: list[dict[str, Any]] = []

    def add(scope: str, slice_name: str, metric: str, value: Any, kind: str) -> None:
        number = float(value) if isinstance(value, int | float) else None
        rows.append({"scope": scope, "slice": slice_name, "metric": metric, "value": number,
                     "ratio": number if kind == "ratio" else None,
                     "milliseconds": number if kind == "ms" else None,
                     "value_text": json.dumps(value), **header})

    for metric, value in (report.get("metrics") or {}).items():
        add("overall", "all", metric, value, "ratio")
    for group, slices in (report.get("slices") or {}).items():
        for name, values in slices.items():
            for metric, value in values.items():
                add(str(group), str(name), metric, value, "ratio")
    for metric, value in (report.get("latency_ms") or {}).items():
        add("latency", "all", metric, value, "ms")
    return pd.DataFrame(rows)


def load_suite_config(name: str) -> dict[str, Any]:
    """The committed suite ``name`` as plain JSON."""
    path = SUITES_DIR / f"{name}.json"
    if not re.fullmatch(r"[a-z_]+", name) or not path.is_file():
        raise InvalidInputError(f"no expectation suite named {name!r} in {SUITES_DIR}")
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


@lru_cache(maxsize=1)
def _context() -> Any:
    # Offline: no usage statistics leave the machine; set before the import reads it.
    os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")
    import great_expectations as gx
    from great_expectations.data_context.types.base import ProgressBarsConfig

    # Its INFO line on the temporary docs site it makes (never used here) reads like a
    # step of the evaluation in the run's log.
    logging.getLogger("great_expectations.data_context.types.base").setLevel(logging.WARNING)
    context = gx.get_context(mode="ephemeral")
    context.variables.progress_bars = ProgressBarsConfig(globally=False)
    return context


def _describe(result: Any) -> str:
    config = result.expectation_config
    kwargs = {k: v for k, v in config.kwargs.items() if k in ("column", "min_value", "max_value",
                                                               "value_set", "regex")}
    args = ", ".join(f"{k}={v!r}" for k, v in kwargs.items())
    detail = result.result or {}
    if "unexpected_count" in detail:
        sample = list(detail.get("partial_unexpected_list") or [])[:3]
        what = f"{detail['unexpected_count']} unexpected value(s), e.g. {sample}"
    else:
        what = f"observed {detail.get('observed_value')!r}"
    return f"{config.type}({args}): {what}"


def validate_frame(frame: pd.DataFrame, suite_name: str) -> Validation:
    """Validate ``frame`` against the committed suite; raises :class:`ExpectationsFailed`."""
    config = load_suite_config(suite_name)
    with _lock:
        import great_expectations as gx

        context = _context()
        suite = gx.ExpectationSuite(**config)
        # An unknown expectation type is logged and dropped by GX: refuse it instead.
        if len(suite.expectations) != len(config.get("expectations", [])):
            raise InvalidInputError(f"expectation suite '{suite_name}' holds an expectation "
                                    "Great Expectations does not know")
        source = context.data_sources.add_pandas(f"{suite_name}-{next(_names)}")
        batch = (source.add_dataframe_asset("rows").add_batch_definition_whole_dataframe("all")
                 .get_batch(batch_parameters={"dataframe": frame}))
        result = batch.validate(suite)
    failures = [_describe(r) for r in result.results if not r.success]
    if failures:
        for failure in failures:
            log.error("expectation failed (%s): %s", suite_name, failure)
        raise ExpectationsFailed(suite_name, failures)
    return Validation(suite_name, len(suite.expectations), len(frame))


def validate_documentation_dataset(dataset: DocumentationDataset) -> Validation:
    """The documentation-dataset suite over the dataset's cases."""
    return validate_frame(documentation_dataset_frame(dataset), "documentation_dataset")


def validate_application_content_dataset(dataset: ApplicationContentDataset) -> Validation:
    """The application-content-dataset suite over the dataset's cases."""
    return validate_frame(application_content_dataset_frame(dataset),
                          "application_content_dataset")


def validate_documentation_report(report: Mapping[str, Any]) -> Validation:
    """The documentation-report suite over the report's figures."""
    return validate_frame(report_frame(report), "documentation_report")

def validate_application_content_report(report: Mapping[str, Any]) -> Validation:
    """The application-content-report suite over the report's figures."""
    return validate_frame(report_frame(report), "application_content_report")


def strategies_frame(report: Mapping[str, Any]) -> pd.DataFrame:
    """One row per (ordering, metric), with the reranker's status and whether it agrees
    with its counts."""
    reranker = report.get("reranker") or {}
    requested, ran, status = reranker.get("requested"), reranker.get("ran"), reranker.get(
        "status")
    consistent = (isinstance(requested, int) and isinstance(ran, int) and 0 <= ran <= requested
                  and status == ("ran" if requested and ran == requested
                                 else "partial" if ran else "not_run"))
    rows = [{"strategy": name, "metric": metric,
             "value": float(value) if isinstance(value, int | float) else None,
             "value_text": json.dumps(value),
             "cases": (report.get("strategy_cases") or {}).get(name),
             "pre_authorization": report.get("pre_authorization"),
             "reranker_status": status, "reranker_consistent": consistent,
             "data_classification": report.get("data_classification")}
            for name, values in (report.get("metrics") or {}).items()
            for metric, value in values.items()]
    return pd.DataFrame(rows)


def validate_strategies_report(report: Mapping[str, Any]) -> Validation:
    """The strategies-report suite."""
    return validate_frame(strategies_frame(report), "retrieval_strategies_report")


def tuning_frame(report: Mapping[str, Any]) -> pd.DataFrame:
    """One row per scored parameter set: the committed profile, then every candidate in
    report order, with the verdict's statuses and consistency flags."""
    metric = report.get("metric")
    winner, outcome = report.get("winner"), report.get("outcome")
    candidates = list(report.get("candidates") or [])
    scores = [c["metrics"][metric] for c in candidates]
    common = {
        "metric": metric,
        "validation_status": (report.get("validation") or {}).get("status"),
        "noise_status": (report.get("noise") or {}).get("status"),
        "winner_consistent": (winner is None) == (outcome != "accepted"),
        "sorted": scores == sorted(scores, reverse=True),
        "data_classification": (report.get("dataset") or {}).get("data_classification"),
    }

    def row(entry: Mapping[str, Any], delta: Any) -> dict[str, Any]:
        holdout = entry.get("holdout_metrics")
        return {"selection": entry["metrics"][metric],
                "holdout": holdout[metric] if holdout else None, "delta": delta, **common}

    committed = report.get("committed") or {}
    rows = [row(committed, 0.0)] if committed else []
    rows += [row(c, c["delta_vs_committed"]["selection"]) for c in candidates]
    return pd.DataFrame(rows)


def validate_tuning_report(report: Mapping[str, Any]) -> Validation:
    """The tuning-report suite."""
    return validate_frame(tuning_frame(report), "retrieval_tuning_report")

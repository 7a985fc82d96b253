"""Great Expectations checks of the application-content, strategies and tuning reports,
with part A's machinery (:func:`ragplate.tasks.expectations.validate_frame`) and suites
committed beside its own (``ragplate/catalog/expectations/*.json``).

Each report becomes a small table (one row per figure, or per scored parameter set) with
consistency flags computed here, so a suite can say in one line what must hold: the
reranker's status agrees with its counts, a tuning report has a winner exactly when its
outcome accepted one, candidates are sorted by the metric.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pandas as pd

from ragplate.tasks.expectations import Validation, report_frame, validate_frame


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

"""The per-case view of a documentation evaluation and the thresholds a run must reach.

Pure functions over :class:`~ragplate.tasks.evaluation.scoring.CaseOutcome`: what each case
expected, what it returned and where the first relevant label came, and which figures fall
below the thresholds a run was given. Like the reports, the per-case view carries no query
text (a case is named by its id in the dataset). A ``private`` dataset has no per-case view:
its questions and labels never leave its folder.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from html import escape
from typing import Any

from ragplate.catalog.datasets import DocumentationDataset
from ragplate.catalog.errors import BelowThresholdError, InvalidInputError
from ragplate.tasks.evaluation.metrics import first_rank, rounded
from ragplate.tasks.evaluation.pages import html_table, render_html
from ragplate.tasks.evaluation.scoring import CaseOutcome

#: The depth ``--min-hit-at-5`` counts a hit within.
HIT_DEPTH = 5


def refuse_private_cases(dataset: DocumentationDataset, cases_path: str | None) -> None:
    """``--cases`` is refused for a private dataset, before anything runs."""
    if cases_path is not None and dataset.data_classification == "private":
        raise InvalidInputError(
            f"--cases {cases_path}: the dataset is private (data_classification); its "
            "questions and labels never leave its folder, so no per-case file is written")


def passed(outcome: CaseOutcome) -> bool:
    """A case passes when it expected labels and one is in the first :data:`HIT_DEPTH`
    returned, or expected nothing (a refusal or an authorized empty answer) and nothing
    came back; a case that expects neither passes when retrieval answered."""
    if outcome.relevant:
        rank = first_rank(outcome.ranked, outcome.relevant)
        return rank is not None and rank <= HIT_DEPTH
    if outcome.expect_empty or outcome.expect_authorized_empty:
        return outcome.empty
    return not outcome.unavailable


def case_rows(outcomes: Sequence[CaseOutcome]) -> list[dict[str, Any]]:
    """One row per case, in dataset order: id, locale, slices, expected and returned
    labels, first relevant rank (``None`` when none came back), passed."""
    return [{
        "id": o.case_id,
        "locale": o.locale,
        "slices": list(o.slices),
        "expected": list(o.relevant),
        "expect_empty": o.expect_empty or o.expect_authorized_empty,
        "returned": list(o.ranked),
        "first_relevant_rank": first_rank(o.ranked, o.relevant) if o.relevant else None,
        "unavailable": o.unavailable,
        "passed": passed(o),
    } for o in outcomes]


def cases_document(report: dict[str, Any], rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The ``--cases`` file: the report's identity, then every case."""
    failing = sum(1 for row in rows if not row["passed"])
    return {"module": report["module"], "index_profile": report["index_profile"],
            "dataset": report["dataset"], "retrieval": report["retrieval"],
            "case_count": len(rows), "failing": failing, "cases": rows}


def hit_at(outcomes: Sequence[CaseOutcome], depth: int = HIT_DEPTH) -> float:
    """Share of the cases with expected labels that have one in the first ``depth``,
    rounded as reports round (see :func:`exact_figures` for the figure itself)."""
    return rounded(exact_figures(outcomes, depth)[0])


def exact_figures(outcomes: Sequence[CaseOutcome], depth: int = HIT_DEPTH
                  ) -> tuple[float, float]:
    """hit@``depth`` and MRR over the cases with expected labels, unrounded: a threshold
    is held to the figure, not to the report's four decimals (0 without such a case)."""
    scored = [o for o in outcomes if o.relevant]
    if not scored:
        return 0.0, 0.0
    ranks = [first_rank(o.ranked, o.relevant) for o in scored]
    hits = sum(1 for rank in ranks if rank is not None and rank <= depth)
    reciprocal = sum(1.0 / rank for rank in ranks if rank is not None)
    return hits / len(scored), reciprocal / len(scored)


def _shown(value: float, minimum: float) -> float:
    """``value`` with as few decimals (4 at least) as show it below ``minimum``."""
    for decimals in range(4, 16):
        if round(value, decimals) < minimum:
            return round(value, decimals) + 0.0
    return value


@dataclass(frozen=True)
class Thresholds:
    """The least figures a run must reach (``None``: not checked)."""

    min_hit_at_5: float | None = None
    min_mrr: float | None = None

    def __post_init__(self) -> None:
        for flag, value in (("--min-hit-at-5", self.min_hit_at_5),
                            ("--min-mrr", self.min_mrr)):
            if value is not None and not 0.0 <= value <= 1.0:
                raise InvalidInputError(f"{flag} {value}: expected a figure from 0 to 1")


def refuse_unmeasurable(thresholds: Thresholds, dataset: DocumentationDataset) -> None:
    """Refuse a threshold on hit@5 or MRR for a dataset none of whose cases expects a
    source (only no-answer cases): the figure would measure nothing and always fail."""
    asked = [flag for flag, value in (("--min-hit-at-5", thresholds.min_hit_at_5),
                                      ("--min-mrr", thresholds.min_mrr)) if value is not None]
    if asked and not any(case.expected_source_labels for case in dataset.cases):
        raise InvalidInputError(f"{' and '.join(asked)}: no case of the dataset expects a "
                                "source, so hit@5 and MRR measure nothing; drop the "
                                "threshold or add answered cases")


#: How a figure is named in the message of a threshold it misses.
FIGURE_NAMES = {"--min-hit-at-5": "hit@5", "--min-mrr": "MRR"}


def misses(thresholds: Thresholds, outcomes: Sequence[CaseOutcome],
           report: dict[str, Any]) -> list[dict[str, Any]]:
    """Each threshold the run misses, as ``{"threshold": "--min-mrr", "minimum": 0.99,
    "value": 0.6042}`` (what ``--json`` prints beside the report)."""
    hit, mrr = exact_figures(outcomes)
    measured: list[tuple[str, float | None, float]] = [
        ("--min-hit-at-5", thresholds.min_hit_at_5, hit),
        ("--min-mrr", thresholds.min_mrr, mrr),
    ]
    return [{"threshold": flag, "minimum": minimum, "value": _shown(value, minimum)}
            for flag, minimum, value in measured if minimum is not None and value < minimum]


def below(thresholds: Thresholds, outcomes: Sequence[CaseOutcome],
          report: dict[str, Any]) -> list[str]:
    """Each figure below its threshold, as ``"MRR 0.6042 < --min-mrr 0.99"``."""
    return [f"{FIGURE_NAMES[m['threshold']]} {m['value']} < {m['threshold']} {m['minimum']}"
            for m in misses(thresholds, outcomes, report)]


def enforce(thresholds: Thresholds, outcomes: Sequence[CaseOutcome],
            report: dict[str, Any], output: str) -> None:
    """Raise :class:`BelowThresholdError` naming every figure below its threshold; it
    carries the misses and the report, which ``--json`` still prints."""
    failures = below(thresholds, outcomes, report)
    if failures:
        raise BelowThresholdError(f"{'; '.join(failures)} (report {output})",
                                  failed=misses(thresholds, outcomes, report), report=report)


def failing_section(rows: Sequence[dict[str, Any]] | None) -> str:
    """The HTML section of the failing cases (``None``: a private dataset, withheld)."""
    if rows is None:
        return ("<h2>Failing cases</h2><p>Not shown: the dataset is private, its questions "
                "never leave its folder.</p>")
    failing = [r for r in rows if not r["passed"]]
    if not failing:
        return f"<h2>Failing cases</h2><p>None of the {len(rows)} cases failed.</p>"
    table = html_table(
        ["case", "locale", "expected", "returned", "first relevant rank"],
        [[r["id"], r["locale"],
          ", ".join(r["expected"]) or ("nothing" if r["expect_empty"] else ""),
          ", ".join(r["returned"]) or ("unavailable" if r["unavailable"] else "nothing"),
          r["first_relevant_rank"] if r["first_relevant_rank"] is not None else "none"]
         for r in failing], "ctx")
    return (f"<h2>Failing cases</h2><p>{escape(str(len(failing)))} of {len(rows)} cases "
            f"failed (no relevant label in the first {HIT_DEPTH}, or an answer where "
            "nothing was expected).</p>" + table)


def report_page(report: dict[str, Any], rows: Sequence[dict[str, Any]] | None, *,
                title: str, measured: dict[str, Any] | None = None) -> str:
    """The HTML page of a documentation report, with its failing cases (``rows`` ``None``
    for a private dataset); ``measured``: the cases each metric is measured over
    (:func:`ragplate.tasks.evaluation.scoring.measured_by_scope`), a metric over none
    reading ``n/a``."""
    return render_html(report, title=title, sections=[failing_section(rows)],
                       measured=measured)

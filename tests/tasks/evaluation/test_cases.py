"""The per-case view and the thresholds, over literal outcomes."""

from __future__ import annotations

import json
import pickle

import pytest

from ragplate.catalog.datasets import DocumentationDataset
from ragplate.catalog.errors import BelowThresholdError, InvalidInputError
from ragplate.catalog.settings import PROJECT_ROOT
from ragplate.tasks.evaluation.cases import (
    Thresholds,
    below,
    case_rows,
    enforce,
    failing_section,
    hit_at,
    passed,
    refuse_private_cases,
    refuse_unmeasurable,
)
from tests.tasks.evaluation.test_scoring import outcome

OUTCOMES = [
    outcome("first", ("a", "b"), ("a",)),
    outcome("sixth", ("x1", "x2", "x3", "x4", "x5", "c"), ("c",), locale="it"),
    outcome("refused", (), expect_empty=True),
    outcome("answered", ("z",), expect_empty=True),
    outcome("broken", (), ("q",), unavailable=True),
]
# The figure the report shows; thresholds are held to the outcomes themselves.
REPORT = {"metrics": {"mean_reciprocal_rank": 0.3889}}


def test_a_case_passes_with_a_relevant_label_in_the_first_five_or_an_empty_refusal() -> None:
    assert [passed(o) for o in OUTCOMES] == [True, False, True, False, False]


def test_case_rows_name_expected_returned_and_the_first_relevant_rank() -> None:
    rows = case_rows(OUTCOMES)
    assert [(r["id"], r["first_relevant_rank"], r["passed"]) for r in rows] == [
        ("first", 1, True), ("sixth", 6, False), ("refused", None, True),
        ("answered", None, False), ("broken", None, False)]
    assert rows[1]["expected"] == ["c"] and rows[1]["returned"][-1] == "c"
    assert rows[1]["locale"] == "it" and rows[4]["unavailable"] is True
    assert rows[3]["expect_empty"] is True
    assert "query" not in json.dumps(rows)


def test_hit_at_five_counts_only_cases_with_expected_labels() -> None:
    # first: rank 1; sixth: rank 6 (beyond 5); broken: nothing: 1 of 3.
    assert hit_at(OUTCOMES) == 0.3333
    assert hit_at(OUTCOMES, 6) == 0.6667
    assert hit_at([outcome("r", (), expect_empty=True)]) == 0.0


def test_figures_below_their_thresholds_are_named() -> None:
    assert below(Thresholds(), OUTCOMES, REPORT) == []
    assert below(Thresholds(min_hit_at_5=0.3, min_mrr=0.3), OUTCOMES, REPORT) == []
    assert below(Thresholds(min_hit_at_5=0.5, min_mrr=0.99), OUTCOMES, REPORT) == [
        "hit@5 0.3333 < --min-hit-at-5 0.5", "MRR 0.3889 < --min-mrr 0.99"]
    with pytest.raises(BelowThresholdError,
                       match=r"MRR 0.3889 < --min-mrr 0.99 \(report r.json") as raised:
        enforce(Thresholds(min_mrr=0.99), OUTCOMES, REPORT, "r.json")
    # It carries what --json prints, and keeps it through pickling (Prefect may persist it).
    missed = [{"threshold": "--min-mrr", "minimum": 0.99, "value": 0.3889}]
    assert (raised.value.failed, raised.value.report) == (missed, REPORT)
    copy = pickle.loads(pickle.dumps(raised.value))
    assert (str(copy), copy.failed, copy.report) == (str(raised.value), missed, REPORT)
    assert BelowThresholdError.exit_code == 1


def test_a_threshold_is_held_to_the_figure_not_to_its_four_decimals() -> None:
    # MRR 8/9 = 0.888…, shown 0.8889 in the report: below a minimum of 0.88889.
    nine = [outcome(f"c{n}", ("a",), ("a",)) for n in range(8)]
    nine.append(outcome("c8", ("x", "a"), ("a",)))
    nine = [*nine[:7], outcome("c7", (), ("a",)), nine[8]]
    report = {"metrics": {"mean_reciprocal_rank": 0.8333}}
    # 7 at rank 1, one missed, one at rank 2: (7 + 0.5) / 9 = 0.8333…; hit@5 8/9.
    assert below(Thresholds(min_mrr=0.83334, min_hit_at_5=0.88889), nine, report) == [
        "hit@5 0.888889 < --min-hit-at-5 0.88889", "MRR 0.8333 < --min-mrr 0.83334"]
    assert below(Thresholds(min_mrr=0.8333, min_hit_at_5=0.8888), nine, report) == []


@pytest.mark.parametrize("value", [-0.1, 1.5])
def test_a_threshold_outside_zero_to_one_is_refused(value: float) -> None:
    with pytest.raises(InvalidInputError, match=f"--min-mrr {value}: expected a figure"):
        Thresholds(min_mrr=value)


def test_cases_of_a_private_dataset_are_refused() -> None:
    data = json.loads((PROJECT_ROOT / "datasets" / "documentation-user-fixture.json")
                      .read_text(encoding="utf-8"))
    synthetic = DocumentationDataset.model_validate(data)
    private = DocumentationDataset.model_validate({**data, "data_classification": "private"})
    refuse_private_cases(synthetic, "cases.json")
    refuse_private_cases(private, None)
    with pytest.raises(InvalidInputError, match=r"--cases cases\.json: the dataset is private"):
        refuse_private_cases(private, "cases.json")


def test_the_page_section_lists_failing_cases_only() -> None:
    html = failing_section(case_rows(OUTCOMES))
    assert "3 of 5 cases failed" in html
    assert "<td>sixth</td>" in html and "<td>first</td>" not in html
    assert "<td>unavailable</td>" in html  # what the broken case returned
    assert "None of the 1 cases failed" in failing_section(case_rows(OUTCOMES[:1]))
    assert "Not shown: the dataset is private" in failing_section(None)


def test_a_threshold_on_a_dataset_without_an_answered_case_is_refused() -> None:
    everyday = DocumentationDataset.model_validate(json.loads(
        (PROJECT_ROOT / "datasets" / "documentation-laraplate-everyday.json").read_text()))
    assert not any(case.expected_source_labels for case in everyday.cases)
    for thresholds, named in ((Thresholds(min_hit_at_5=0.5), "--min-hit-at-5"),
                              (Thresholds(min_mrr=0.5), "--min-mrr"),
                              (Thresholds(min_hit_at_5=0.5, min_mrr=0.5),
                               "--min-hit-at-5 and --min-mrr")):
        with pytest.raises(InvalidInputError, match=f"^{named}: no case of the dataset"):
            refuse_unmeasurable(thresholds, everyday)
    refuse_unmeasurable(Thresholds(), everyday)  # no threshold: nothing to refuse
    answered = DocumentationDataset.model_validate(json.loads(
        (PROJECT_ROOT / "datasets" / "documentation-user-fixture.json").read_text()))
    refuse_unmeasurable(Thresholds(min_hit_at_5=0.5, min_mrr=0.5), answered)

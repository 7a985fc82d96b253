"""Great Expectations suites over datasets and reports (committed suites, offline)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragplate.catalog.datasets import DocumentationDataset
from ragplate.catalog.errors import InvalidInputError
from ragplate.catalog.settings import PROJECT_ROOT
from ragplate.tasks.evaluation import expectations
from ragplate.tasks.evaluation.dataset_files import read_dataset
from tests.conftest import LARAPLATE_BENCHMARKS

DATASETS = ["2026-08-documentation-user.json", "2026-09-17-developer-core-baseline.json",
            "2026-09-18-developer-retrieval.json"]
REPORTS = ["2026-09-17-developer-core-vector-baseline.json",
           "2026-09-18-developer-retrieval-report.json"]


def public(name: str) -> Path:
    path = LARAPLATE_BENCHMARKS / name
    if not path.is_file():
        pytest.skip(f"{path} not found")
    return path


@pytest.mark.parametrize("name", DATASETS)
def test_public_datasets_pass(name: str) -> None:
    result = expectations.validate_documentation_dataset(
        read_dataset(public(name), DocumentationDataset).data)
    assert result.suite == "documentation_dataset" and result.expectations >= 10


@pytest.mark.parametrize("name", REPORTS)
def test_published_reports_pass_the_report_suite(name: str) -> None:
    report = json.loads(public(name).read_text(encoding="utf-8"))
    assert expectations.validate_documentation_report(report).rows > 40


def test_a_failed_expectation_is_named(caplog: pytest.LogCaptureFixture) -> None:
    report = json.loads(public(REPORTS[1]).read_text(encoding="utf-8"))
    report["metrics"]["citation_precision"] = 1.5
    report["slices"]["category"]["cms"]["mean_reciprocal_rank"] = 0.123456
    report["data_classification"] = "public"
    with pytest.raises(expectations.ExpectationsFailed) as info:
        expectations.validate_documentation_report(report)
    failures = info.value.failures
    assert any("expect_column_values_to_be_between(column='ratio'" in f and "[1.5]" in f
               for f in failures)
    assert any("column='value_text'" in f and "0.123456" in f for f in failures)
    assert any("column='data_classification'" in f for f in failures)
    assert "expect_column_values_to_be_between" in caplog.text


def test_a_dataset_where_no_case_expects_anything_fails() -> None:
    loaded = read_dataset(PROJECT_ROOT / "datasets" / "documentation-user-fixture.json",
                          DocumentationDataset)
    nothing = loaded.data.model_copy(update={"cases": [
        c.model_copy(update={"expected_source_labels": [], "expected_citation_labels": [],
                             "expect_refusal": False, "expect_authorized_empty": False})
        for c in loaded.data.cases]})
    with pytest.raises(expectations.ExpectationsFailed,
                       match=r"expect_column_max_to_be_between\(column='expects_outcome'"):
        expectations.validate_documentation_dataset(nothing)


def test_a_dataset_of_no_answer_questions_alone_is_valid() -> None:
    # It measures abstention: refusal accuracy is its figure.
    loaded = read_dataset(PROJECT_ROOT / "datasets" / "documentation-user-fixture.json",
                          DocumentationDataset)
    refusals = loaded.data.model_copy(update={"cases": [
        c for c in loaded.data.cases if c.expect_refusal]})
    assert refusals.cases
    assert expectations.validate_documentation_dataset(refusals).rows == len(refusals.cases)


def test_suites_are_committed_and_known(monkeypatch: pytest.MonkeyPatch,
                                        tmp_path: Path) -> None:
    names = sorted(p.stem for p in expectations.SUITES_DIR.glob("*.json"))
    assert names == ["application_content_dataset", "application_content_report",
                     "documentation_dataset", "documentation_report",
                     "retrieval_strategies_report", "retrieval_tuning_report"]
    bad = tmp_path / "documentation_report.json"
    suite = expectations.load_suite_config("documentation_report")
    suite["expectations"].append({"type": "expect_nonsense", "kwargs": {}})
    bad.write_text(json.dumps(suite), encoding="utf-8")
    monkeypatch.setattr(expectations, "SUITES_DIR", tmp_path)
    with pytest.raises(InvalidInputError, match="does not know"):
        expectations.validate_documentation_report(
            json.loads(public(REPORTS[0]).read_text(encoding="utf-8")))
    with pytest.raises(InvalidInputError, match="no expectation suite"):
        expectations.load_suite_config("../etc")

"""The console tables of ``evaluate documentation`` and ``evaluate application-content``:
a metric no case measures reads n/a, while the report keeps its 0.0."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from ragplate.catalog.datasets import DocumentationDataset
from ragplate.catalog.settings import PROJECT_ROOT
from ragplate.cli import evaluate
from ragplate.cli.evaluate_content import shown_metrics
from ragplate.tasks.evaluation.dataset_files import read_dataset
from ragplate.tasks.evaluation.documentation import measured_cases

BASELINES = PROJECT_ROOT / "datasets" / "baselines"


def rows(text: str) -> dict[str, str]:
    return {line.split("│")[1].strip(): line.split("│")[2].strip()
            for line in text.splitlines() if line.count("│") == 3}


def test_the_documentation_table_shows_n_a_for_a_metric_no_case_measures(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from rich.console import Console

    dataset = read_dataset(PROJECT_ROOT / "datasets" / "documentation-developer-fixture.json",
                           DocumentationDataset).data
    assert not any(case.expect_authorized_empty for case in dataset.cases)
    report = json.loads((BASELINES / "documentation-developer-fixture-hybrid.json")
                        .read_text(encoding="utf-8"))
    assert report["metrics"]["authorized_empty_accuracy"] == 0.0  # the report is unchanged
    screen = io.StringIO()
    monkeypatch.setattr(evaluate, "console", Console(file=screen, width=120))
    evaluate._print(report, Path("r.json"), measured_cases(dataset))
    shown = rows(screen.getvalue())
    assert shown["authorized_empty_accuracy"] == "n/a"
    assert shown["source_hit_at_k"] == "1.0" and shown["refusal_accuracy"] == "0.9"


def test_the_application_content_table_shows_n_a_for_a_metric_no_case_measures(
        tmp_path: Path) -> None:
    report = json.loads((BASELINES / "application-content-fixture.json")
                        .read_text(encoding="utf-8"))
    source = PROJECT_ROOT / "datasets" / "application-content-fixture.json"
    # The fixture's one authorized-empty case is measured (and missed): shown as 0.0.
    assert shown_metrics(report, source)["authorized_empty_accuracy"] == 0.0
    data = json.loads(source.read_text(encoding="utf-8"))
    for case in data["cases"]:
        case["expect_authorized_empty"] = False
    (tmp_path / "d.json").write_text(json.dumps(data), encoding="utf-8")
    shown = shown_metrics(report, tmp_path / "d.json")
    assert str(shown["authorized_empty_accuracy"]) == "n/a"
    assert shown["hit_at_5"] == report["metrics"]["hit_at_5"]

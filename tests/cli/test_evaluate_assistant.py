"""``ragplate evaluate assistant``'s console table and its reading of the dataset."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from typer.testing import CliRunner

from ragplate.catalog.assistant_datasets import AssistantDataset
from ragplate.catalog.datasets import DatasetError, DocumentationDataset
from ragplate.catalog.settings import PROJECT_ROOT
from ragplate.cli import app
from ragplate.cli.evaluate_assistant import metrics_table
from ragplate.tasks.evaluation.dataset_files import read_dataset


def test_an_assistant_metric_no_case_measures_reads_n_a() -> None:
    report = {"module": "core", "case_count": 2,
              "metrics": {"surface_accuracy": 1.0, "proposal_accuracy": 0.0},
              "measured": {"surface_accuracy": 2, "proposal_accuracy": 0}}
    screen = io.StringIO()
    Console(file=screen, width=100).print(metrics_table(report))

    rows = {line.split("│")[1].strip(): line.split("│")[2].strip()
            for line in screen.getvalue().splitlines() if line.count("│") == 4}
    assert rows["surface_accuracy"] == "1.0" and rows["proposal_accuracy"] == "n/a"


@pytest.mark.parametrize(("name", "what"), [
    ("documentation-developer-fixture.json",
     "is a documentation dataset (index_profile, cases[].expected_source_labels), not an "
     "assistant dataset (cases carrying expected_surface); ragplate evaluate documentation "
     "reads it"),
    ("application-content-fixture.json",
     "is an application-content dataset (source, cases[].expected_hit_ids), not an "
     "assistant dataset (cases carrying expected_surface); ragplate evaluate "
     "application-content reads it"),
    ("baselines/documentation-user-fixture-vector.json",
     "is a documentation report written by `evaluate documentation` (index_profile), not an "
     "assistant dataset (cases carrying expected_surface)"),
])
def test_a_dataset_of_another_kind_is_named_not_listed_field_by_field(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, what: str) -> None:
    monkeypatch.setenv("RAGPLATE_HOME", str(tmp_path / "never-started"))
    path = PROJECT_ROOT / "datasets" / name
    result = CliRunner().invoke(app, ["evaluate", "assistant", "--dataset", str(path),
                                      "--output", str(tmp_path / "r.json")])
    assert isinstance(result.exception, DatasetError), result.output
    assert str(result.exception) == f"{path} {what}"
    assert not (tmp_path / "never-started").exists()


def test_the_other_readers_name_an_assistant_dataset_too(tmp_path: Path) -> None:
    path = PROJECT_ROOT / "datasets" / "assistant-fixture.json"
    with pytest.raises(DatasetError, match=r"is an assistant dataset \(cases\[\]\."
                                           r"expected_surface\), not a documentation "
                                           r"dataset; ragplate evaluate assistant reads it$"):
        read_dataset(path, DocumentationDataset)
    # A file of the right kind with a mistake is still told field by field.
    bad: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    bad["cases"][0]["expected_surface"] = "nowhere"
    (tmp_path / "a.json").write_text(json.dumps(bad), encoding="utf-8")
    with pytest.raises(DatasetError, match="field 'expected_surface'"):
        read_dataset(tmp_path / "a.json", AssistantDataset)

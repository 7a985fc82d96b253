"""``ragplate bench …`` refuses a bad corpus, dataset or profile before starting anything."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragplate.catalog.errors import InvalidInputError
from ragplate.cli import app


@pytest.mark.parametrize(("args", "named"), [
    (["indexing", "--corpus", "{missing}"], "--corpus {missing}: no such directory"),
    (["indexing", "--corpus", "{docs}", "--datasets", "{missing}"],
     "--datasets {missing}: no such directory"),
    (["hostile", "--corpus", "{missing}"], "--corpus {missing}: no such directory"),
    (["fusion", "--corpus", "{missing}"], "--corpus {missing}: no such directory"),
    (["retrieval", "--corpus", "{missing}"], "--corpus {missing}: no such directory"),
    (["retrieval", "--corpus", "{docs}", "--dataset", "{missing}"],
     "--dataset {missing}: no such file"),
    (["assistant", "--dataset", "{missing}"], "--dataset {missing}: no such file"),
    (["switch", "--source", "bogus"], "--source: unknown embedding profile 'bogus'"),
    (["switch", "--target", "bogus"], "--target: unknown embedding profile 'bogus'"),
    (["retrieval", "--corpus", "{docs}", "--output", "{docs}"],
     "--output {docs}: is a directory, not a file"),
    (["assistant", "--output", "{docs}"], "--output {docs}: is a directory, not a file"),
    (["indexing", "--corpus", "{docs}", "--output", "{docs}"],
     "--output {docs}: is a directory, not a file"),
    (["retrieval", "--corpus", "{docs}", "--output", "{file}/figures.json"],
     "--output {file}/figures.json: {file} is not a writable directory"),
])
def test_a_bad_option_is_refused_naming_it_before_anything_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str], named: str
) -> None:
    import importlib

    # The benchmark itself never runs: the refusal comes first.
    for name in ("indexing", "hostile", "fusion", "retrieval", "assistant", "switch"):
        module = importlib.import_module(f"ragplate.bench.{name}")
        monkeypatch.setattr(module, "run", lambda **_: pytest.fail("the benchmark ran"))
    docs = tmp_path / "docs"
    docs.mkdir()
    (tmp_path / "file").write_text("")
    values = {"missing": str(tmp_path / "missing"), "docs": str(docs),
              "file": str(tmp_path / "file")}
    result = CliRunner().invoke(app, ["bench", *[a.format(**values) for a in args]])

    assert isinstance(result.exception, InvalidInputError), result.output
    assert str(result.exception).startswith(named.format(**values))
    assert result.exception.exit_code == 2


def test_figures_are_written_whole_or_not_at_all(tmp_path: Path) -> None:
    from ragplate.bench.scratch import write_figures

    output = tmp_path / "deep" / "figures.json"
    write_figures(output, {"a": 1})
    assert output.read_text() == '{\n  "a": 1\n}\n'
    assert sorted(p.name for p in output.parent.iterdir()) == ["figures.json"]


@pytest.mark.parametrize(("content", "named"), [
    ('{"cases": [{"id": "x"}]}', "not a screening dataset (case 'x', field 'query'"),
    ('{"cases": [{"id": "x", "query": "Hi", "expect_refusal": false}]}',
     "not a screening dataset (case 'x', field 'locale'"),
    ('{"items": []}', "not a screening dataset (no cases)"),
    ("{", "not JSON (line 1, column 2"),
])
def test_bench_assistant_refuses_a_file_that_is_no_screening_dataset_naming_it(
    tmp_path: Path, content: str, named: str
) -> None:
    dataset = tmp_path / "screening.json"
    dataset.write_text(content)

    result = CliRunner().invoke(app, ["bench", "assistant", "--dataset", str(dataset),
                                      "--output", str(tmp_path / "figures.json")])

    assert isinstance(result.exception, InvalidInputError), result.output
    assert named in str(result.exception) and str(dataset) in str(result.exception)
    assert not (tmp_path / "figures.json").exists()

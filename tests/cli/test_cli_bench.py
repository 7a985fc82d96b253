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
    values = {"missing": str(tmp_path / "missing"), "docs": str(docs)}
    result = CliRunner().invoke(app, ["bench", *[a.format(**values) for a in args]])

    assert isinstance(result.exception, InvalidInputError), result.output
    assert str(result.exception).startswith(named.format(**values))
    assert result.exception.exit_code == 2

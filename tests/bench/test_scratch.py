"""The benchmarks' scratch installation is undone whatever happens inside it."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from ragplate.bench.scratch import scratch_home, write_figures
from ragplate.infra import database
from ragplate.infra.environment import get_settings


def test_the_scratch_home_is_used_then_removed_and_the_environment_restored(
    monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RAGPLATE_HOME", "/somewhere/else")
    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    # The session's engines stay: record the call instead of disposing them.
    disposed: list[bool] = []
    monkeypatch.setattr(database, "dispose_all", lambda: disposed.append(True))

    with (pytest.raises(RuntimeError, match="inside"),
          scratch_home("ragplate-test-") as (scratch, settings)):
        assert settings.home == scratch / "home"
        assert get_settings().home == scratch / "home"
        os.environ["PREFECT_API_URL"] = "http://127.0.0.1:1/api"
        raise RuntimeError("inside")

    assert not scratch.exists()
    assert disposed == [True]
    assert os.environ["RAGPLATE_HOME"] == "/somewhere/else"
    assert "PREFECT_API_URL" not in os.environ
    assert get_settings().home == Path("/somewhere/else")


def test_figures_are_written_as_indented_json(tmp_path: Path) -> None:
    output = tmp_path / "reports" / "bench.json"

    write_figures(output, {"ratio": 1.1})

    assert json.loads(output.read_text()) == {"ratio": 1.1}
    assert output.read_text().endswith("}\n")

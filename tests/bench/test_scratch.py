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


def test_sigterm_ends_a_benchmark_through_its_cleanup(tmp_path: Path) -> None:
    """``timeout`` and a cancelled CI job send SIGTERM: the scratch home goes as with Ctrl-C."""
    import signal
    import subprocess
    import sys
    import time

    marker = tmp_path / "scratch.txt"
    script = ("import time, pathlib\n"
              "from ragplate.bench.scratch import scratch_home\n"
              "with scratch_home('ragplate-test-term-') as (scratch, _settings):\n"
              f"    pathlib.Path({str(marker)!r}).write_text(str(scratch))\n"
              "    time.sleep(120)\n")
    child = subprocess.Popen([sys.executable, "-c", script], env={
        **os.environ, "RAGPLATE_HOME": str(tmp_path / "unused")})
    deadline = time.monotonic() + 60
    while not (marker.exists() and marker.read_text()):
        assert time.monotonic() < deadline and child.poll() is None, "no scratch home made"
        time.sleep(0.05)
    scratch = Path(marker.read_text())
    assert scratch.is_dir()

    child.send_signal(signal.SIGTERM)

    assert child.wait(timeout=60) == 128 + signal.SIGTERM
    assert not scratch.exists()

"""Running the CLI in-process as ``ragplate`` runs it."""

from __future__ import annotations

import pytest

from ragplate.cli import main


def run_main(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
             *args: str) -> tuple[int, str]:
    """Through ``main()``, which turns a ragplate error into one line and its exit code;
    returns the exit code and stderr followed by stdout."""
    monkeypatch.setattr("sys.argv", ["ragplate", *args])
    with pytest.raises(SystemExit) as exited:
        main()
    captured = capsys.readouterr()
    return int(exited.value.code or 0), captured.err + captured.out

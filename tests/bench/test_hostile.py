"""``bench hostile``'s timed runs: an interrupted benchmark leaves no run behind."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import psutil
import pytest

from ragplate.bench import hostile


def test_an_interrupted_run_is_killed_not_left_running(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pid_file = tmp_path / "pid"
    command = [sys.executable, "-c",
               f"import os, time; open({str(pid_file)!r}, 'w').write(str(os.getpid())); "
               "time.sleep(120)"]
    real_sleep = time.sleep

    def interrupted(seconds: float) -> None:
        if pid_file.exists() and pid_file.read_text():
            raise SystemExit(143)  # what the scratch home's SIGTERM handler raises
        real_sleep(seconds)

    monkeypatch.setattr(hostile.time, "sleep", interrupted)

    with pytest.raises(SystemExit):
        hostile._peak_run(command, dict(os.environ))

    pid = int(pid_file.read_text())
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE

"""The ``noida-db`` emulator of the Elasticsearch 8.15 HTTP API (a dev dependency), started
on a loopback port for the benchmarks and the tests. It is an emulator, not
Elasticsearch: figures measured on it say what ragplate's driver costs against it, not what
a cluster would answer in."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path


def emulator_binary() -> str:
    """The ``noida-db`` command of this virtual environment."""
    beside = Path(sys.executable).with_name("noida-db")
    found = str(beside) if beside.exists() else shutil.which("noida-db")
    if not found:
        raise RuntimeError("noida-db is not installed: run `make install` (dev dependency)")
    return found


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=1) as answer:
            return bool(answer.status == 200)
    except OSError:
        return False


@dataclass
class Emulator:
    """A running ``noida-db`` serving only its Elasticsearch emulation."""

    process: subprocess.Popen[bytes]
    url: str
    data_dir: Path

    def stop(self) -> None:
        """Stop the processes :func:`start_emulator` started (the ``noida-db`` command runs
        the emulator as a child: the whole process group goes), and remove its data."""
        _signal_group(self.process, signal.SIGTERM)
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            _signal_group(self.process, signal.SIGKILL)
            self.process.wait(10)
        shutil.rmtree(self.data_dir, ignore_errors=True)


def _signal_group(process: subprocess.Popen[bytes], number: signal.Signals) -> None:
    """Send ``number`` to the process group :func:`start_emulator` made for ``process``."""
    with contextlib.suppress(ProcessLookupError):  # already gone
        os.killpg(process.pid, number)


def start_emulator(port: int, timeout: float = 30.0, parent: Path | None = None) -> Emulator:
    """Start the emulator on ``127.0.0.1:port`` with its data in a new temporary directory
    (under ``parent``); wait until ``GET /`` answers."""
    data_dir = Path(tempfile.mkdtemp(prefix="ragplate-es-emulator-", dir=parent))
    with open(data_dir / "noida-db.log", "wb") as log:
        process = subprocess.Popen(
            [emulator_binary(), "start", "--only", "elasticsearch", "--data-dir",
             str(data_dir / "data"), "--host", "127.0.0.1", "--elasticsearch-port", str(port)],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True)  # its own group: stop() ends the child it starts too
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if _answers(url):
            return Emulator(process, url, data_dir)
        if process.poll() is not None:
            break
        time.sleep(0.1)
    _signal_group(process, signal.SIGKILL)
    process.wait(10)
    shutil.rmtree(data_dir, ignore_errors=True)
    raise RuntimeError(f"the noida-db emulator did not answer on {url} within {timeout} s")

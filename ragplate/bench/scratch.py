"""The scratch installation a benchmark runs in, and where its figures go."""

from __future__ import annotations

import json
import os
import shutil
import signal
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ragplate.catalog.settings import Settings

#: Variables a benchmark points at its scratch services; restored afterwards.
_ENVIRONMENT = ("RAGPLATE_HOME", "PREFECT_API_URL")


def restore_environment(saved: dict[str, str | None]) -> None:
    """Put back the variables of ``saved`` (``None``: the variable was not set)."""
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


@contextmanager
def scratch_home(prefix: str) -> Iterator[tuple[Path, Settings]]:
    """A temporary directory whose ``home`` is ``RAGPLATE_HOME`` for the block, with the
    settings read from it. Afterwards the services started there are stopped, the
    environment is restored and the directory is removed, whatever happened."""
    from ragplate.infra import postgres, prefect_server
    from ragplate.infra.database import dispose_all
    from ragplate.infra.environment import get_settings

    scratch = Path(tempfile.mkdtemp(prefix=prefix))
    saved = {key: os.environ.get(key) for key in _ENVIRONMENT}
    os.environ["RAGPLATE_HOME"] = str(scratch / "home")
    get_settings.cache_clear()
    settings = get_settings()
    # SIGTERM (timeout, a cancelled CI job) ends the block like Ctrl-C does, through the
    # cleanup below: otherwise the scratch PostgreSQL and directory outlive the run.
    installed = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _exit_on_sigterm) if installed else None
    try:
        yield scratch, settings
    finally:
        if installed:  # a second SIGTERM must not cut the cleanup short
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
        dispose_all()
        prefect_server.stop(settings)
        postgres.stop(settings.home)
        restore_environment(saved)
        get_settings.cache_clear()
        shutil.rmtree(scratch, ignore_errors=True)
        if installed:
            # None: the handler was not set from Python; the default is the closest.
            signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)


def _exit_on_sigterm(signum: int, _frame: object) -> None:
    raise SystemExit(128 + signum)


def write_figures(output: Path, figures: dict[str, Any]) -> None:
    """The figures as indented JSON at ``output`` (its directory created), written whole
    or not at all (a temporary file beside it, then renamed)."""
    output.parent.mkdir(parents=True, exist_ok=True)
    partial = output.with_name(f".{output.name}.partial")
    partial.write_text(json.dumps(figures, indent=2) + "\n")
    partial.replace(output)

"""Shared CLI output helpers."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from rich.console import Console

from ragplate.catalog.errors import RagplateError

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID

console = Console()


def print_json(data: Any) -> None:
    """Machine-readable output: plain JSON on stdout, nothing else."""
    print(json.dumps(data, indent=2, ensure_ascii=False, default=str))


def progress_bar(json_output: bool) -> Progress:
    """A Rich progress bar on the shared console, silent with ``--json``."""
    # Imported here: most commands draw no bar, and every command loads this module.
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TimeElapsedColumn(), console=console, disable=json_output)


@contextmanager
def flow_progress(json_output: bool) -> Iterator[None]:
    """One bar per label the running flow reports through ``ragplate.tasks.progress``."""
    from ragplate.tasks import progress

    bar = progress_bar(json_output)
    tasks: dict[str, TaskID] = {}

    def on_progress(label: str, done: int, total: int) -> None:
        if label not in tasks:
            tasks[label] = bar.add_task(label, total=total)
        bar.update(tasks[label], completed=done, total=total)

    with bar, progress.listening(on_progress):
        yield


class _NoTracebackForExpectedErrors(logging.Filter):
    """Drops the traceback of a ragplate error from a console log record (the message
    line stays): the command prints the error itself, as one line, and exits with its
    code. Records reach the console after the Prefect API handler stored them whole, so
    the flow run's logs in the UI keep the traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        if isinstance(error, RagplateError):
            record.exc_info, record.exc_text = None, None
        return True


def quiet_expected_errors() -> None:
    """Attach :class:`_NoTracebackForExpectedErrors` to the console handlers Prefect
    configured on the root logger (call once Prefect is imported; idempotent)."""
    import prefect.main  # noqa: F401 - configures Prefect's logging

    for handler in logging.getLogger().handlers:
        if not any(isinstance(f, _NoTracebackForExpectedErrors) for f in handler.filters):
            handler.addFilter(_NoTracebackForExpectedErrors())

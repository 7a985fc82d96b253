"""Shared CLI output helpers."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)

console = Console()


def print_json(data: Any) -> None:
    """Machine-readable output: plain JSON on stdout, nothing else."""
    print(json.dumps(data, indent=2, ensure_ascii=False, default=str))


def progress_bar(json_output: bool) -> Progress:
    """A Rich progress bar on the shared console, silent with ``--json``."""
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

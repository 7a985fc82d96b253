"""What a terminal shows of the work a flow runs: a process-wide progress hook, and the
mark of the log records the command running the flow prints in its own way.

Flows report through :func:`report`; the CLI installs a listener that drives a Rich
progress bar. Prefect runs sync tasks in-process, so the hook sees every update.

A flow logs what it found to its flow run's log, which the Prefect UI keeps. When a ragplate
command prints that result itself (``tune-retrieval``'s profile block on stdout, the
reranker's warning on stderr), the flow logs it with ``extra=SHOWN_BY_COMMAND``: the
record still reaches the flow run's log, and the command's console handler leaves it out
(:func:`shown_by_command`), so the terminal shows it once. A flow run started elsewhere (a
worker, the Prefect UI) logs it on its console as any other record.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

Listener = Callable[[str, int, int], None]

#: The log record attribute that marks a record the command prints itself.
SHOWN_BY_COMMAND_ATTRIBUTE = "ragplate_shown_by_command"
#: The ``extra`` of a flow's log call whose content the command prints itself.
SHOWN_BY_COMMAND: dict[str, object] = {SHOWN_BY_COMMAND_ATTRIBUTE: True}

_listeners: list[Listener] = []
_lock = threading.Lock()


def report(label: str, done: int, total: int) -> None:
    """Tell every listener that ``done`` of ``total`` units of ``label`` are finished."""
    with _lock:
        listeners = list(_listeners)
    for listener in listeners:
        listener(label, done, total)


@contextmanager
def listening(listener: Listener) -> Iterator[None]:
    """Install ``listener`` for the duration of the block."""
    with _lock:
        _listeners.append(listener)
    try:
        yield
    finally:
        with _lock:
            _listeners.remove(listener)


def shown_by_command(record: logging.LogRecord) -> bool:
    """Whether ``record`` was logged with ``extra=SHOWN_BY_COMMAND``."""
    return bool(getattr(record, SHOWN_BY_COMMAND_ATTRIBUTE, False))

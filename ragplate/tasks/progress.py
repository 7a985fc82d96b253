"""A process-wide progress hook, so a terminal can draw a bar for work a flow runs.

Flows report through :func:`report`; the CLI installs a listener that drives a Rich
progress bar. Prefect runs sync tasks in-process, so the hook sees every update.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

Listener = Callable[[str, int, int], None]

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

"""Fault injection for the switch's own tests (never set in production).

``RAGPLATE_SWITCH_FAULTS`` holds rules separated by commas:

- ``kill:<phase>:<n>``: the process SIGKILLs itself at the n-th checkpoint of the phase
  (a real kill, exactly as an operator's ``kill -9`` or an OOM killer would do it);
- ``sleep:<phase>:<seconds>``: every checkpoint of the phase sleeps (to query search
  while a phase runs);
- ``fail:<chunk id>:<times>``: the chunk task raises the first ``times`` times it runs;
- ``hang:<chunk id>:<seconds>``: the chunk task sleeps before it writes (a stalled worker).

Without the variable every hook returns at once.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections import Counter

ENV = "RAGPLATE_SWITCH_FAULTS"

_counts: Counter[str] = Counter()
_lock = threading.Lock()


def _rules() -> list[tuple[str, str, str]]:
    raw = os.environ.get(ENV, "").strip()
    if not raw:
        return []
    rules = []
    for item in raw.split(","):
        kind, _, rest = item.strip().partition(":")
        # Chunk ids contain colons and '#': the argument is after the last colon.
        name, _, argument = rest.rpartition(":")
        rules.append((kind, name, argument))
    return rules


def checkpoint(phase: str) -> None:
    """A point of ``phase`` where a test may kill the process or slow it down."""
    rules = _rules()
    if not rules:
        return
    with _lock:
        _counts[phase] += 1
        count = _counts[phase]
    for kind, name, argument in rules:
        if name != phase:
            continue
        if kind == "kill" and count == int(argument):
            os.kill(os.getpid(), signal.SIGKILL)
        elif kind == "sleep":
            time.sleep(float(argument))


def chunk(chunk_id: str) -> None:
    """Called by a chunk task before it writes: fail or hang when a test asks."""
    for kind, name, argument in _rules():
        if name != chunk_id:
            continue
        if kind == "fail":
            with _lock:
                _counts[f"fail:{chunk_id}"] += 1
                tries = _counts[f"fail:{chunk_id}"]
            if tries <= int(argument):
                raise RuntimeError(f"injected failure {tries} of chunk {chunk_id}")
        elif kind == "hang":
            time.sleep(float(argument))


def reset() -> None:
    """Forget the counters (tests that run several switches in one process)."""
    with _lock:
        _counts.clear()

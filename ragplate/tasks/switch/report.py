"""What an operator sees of a running switch: the Prefect progress artifact (updated as
it runs), the markdown status artifact, and the terminal's progress bar (through
:mod:`ragplate.tasks.progress`)."""

from __future__ import annotations

import contextlib
import logging
from typing import Any
from uuid import UUID

from ragplate.catalog.switch import PHASES, SwitchState
from ragplate.tasks import progress

log = logging.getLogger("ragplate.switch")

PROGRESS_KEY = "embeddings-switch-progress"
STATUS_KEY = "embeddings-switch-status"


def percent(state: SwitchState) -> float:
    """Overall progress: each phase is a fifth, chunked phases advance by chunk."""
    if state.status == "idle":
        return 100.0 if state.last else 0.0
    if state.phase is None:
        return 0.0
    index = PHASES.index(state.phase)
    inside = 0.0
    written, pending, _ = state.chunk_counts()
    if written + pending:
        inside = written / (written + pending)
    elif state.phase == "embeddings" and state.texts_missing:
        inside = min(1.0, state.records_embedded / state.texts_missing)
    return round(100.0 * (index + inside) / len(PHASES), 2)


def description(state: SwitchState) -> str:
    """Phase, chunks written/pending, round and texts embedded, in one line."""
    if state.status == "idle":
        return "idle" + (f" (last: {state.last.get('target')} activated)" if state.last else "")
    written, pending, round_ = state.chunk_counts()
    return (f"{state.status} | phase {state.phase} | chunks written {written}, pending "
            f"{pending} | round {round_ or state.embed_round} | texts embedded "
            f"{state.records_embedded} | target {state.target}")


def markdown(state: SwitchState, extra: dict[str, Any] | None = None) -> str:
    """The status artifact: the state as a table, the error and what to do next."""
    written, pending, round_ = state.chunk_counts()
    rows = [("status", state.status), ("phase", state.phase), ("target", state.target),
            ("previous", state.previous), ("return switch (abandon)", state.abandon),
            ("chunks written / pending", f"{written} / {pending}"), ("round", round_),
            ("texts to embed / embedded", f"{state.texts_total} / {state.records_embedded}"),
            ("documentation files", state.docs_files),
            ("chunks rewritten", state.chunks_rewritten),
            ("force activate", state.force_activate), ("prune pending", state.prune_pending)]
    lines = ["# embeddings-switch", "", "| field | value |", "|---|---|"]
    lines += [f"| {k} | {v} |" for k, v in rows]
    if state.error:
        lines += ["", f"**Failed ({state.failure}):** {state.error}", "",
                  "Continue with `ragplate embeddings switch --resume` (or retry this flow "
                  "run), or go back with `ragplate embeddings switch --abandon`."]
    gate = state.gate or (state.last or {}).get("gate")
    if gate:
        lines += ["", "## Evaluation gate", "", "```json", _json(gate), "```"]
    if state.last and state.status == "idle":
        lines += ["", "## Last switch", "", "```json", _json(state.last), "```"]
    if extra:
        lines += ["", "```json", _json(extra), "```"]
    return "\n".join(lines) + "\n"


def _json(data: Any) -> str:
    import json

    return json.dumps(data, indent=2, default=str)


class Reporter:
    """Publishes the progress of one flow run (a no-op outside a flow run)."""

    def __init__(self) -> None:
        self.artifact: UUID | None = None
        self._last: tuple[float, str] | None = None

    def open(self) -> None:
        """Create the progress artifact of this flow run."""
        from prefect.artifacts import create_progress_artifact

        with contextlib.suppress(Exception):
            # Called from a sync flow, Prefect's async_dispatch returns the UUID.
            self.artifact = create_progress_artifact(  # type: ignore[assignment]
                0.0, key=PROGRESS_KEY, description="embedding switch")

    def update(self, state: SwitchState) -> None:
        """Publish ``state`` (skipped when nothing visible changed)."""
        written, pending, _ = state.chunk_counts()
        if state.phase == "embeddings":
            progress.report("embeddings: texts", state.records_embedded,
                            max(state.texts_missing, state.records_embedded))
        elif state.phase in ("indexes", "verify") and written + pending:
            progress.report(f"{state.phase}: chunks", written, written + pending)
        now = (percent(state), description(state))
        if self.artifact is None or now == self._last:
            return
        self._last = now
        from prefect.artifacts import update_progress_artifact

        try:
            update_progress_artifact(self.artifact, now[0], description=now[1])
        except Exception as exc:  # the UI must never stop a switch
            log.debug("progress artifact not updated: %s", exc)

    def status(self, state: SwitchState, extra: dict[str, Any] | None = None) -> None:
        """Publish the markdown status artifact."""
        from prefect.artifacts import create_markdown_artifact

        with contextlib.suppress(Exception):
            create_markdown_artifact(markdown(state, extra), key=STATUS_KEY,
                                     description=description(state))

"""The activation, and the prune of every other model's rows and indexes.

The activation is one transaction under the state lock: the serving-model setting becomes
the target and the state goes back to idle. It is the first moment the target serves
anything, and repeating it is harmless. Afterwards the rows of every other model key (in
``model_embeddings``, ``rag_chunks`` and ``rag_sources``) and their HNSW indexes are
dropped (on Elasticsearch: every role's alias moved to the target's index in one
``_aliases`` call at the activation, the other models' indexes deleted at the prune); a
failure there is logged with the command that retries it (``ragplate embeddings prune``)
and does not undo the activation.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any

from ragplate.catalog.switch import SwitchRefusedError, SwitchState, now
from ragplate.infra import settings_store
from ragplate.infra.locks import state_transaction
from ragplate.infra.runtime import Runtime
from ragplate.infra.switch_state import read_state, write_state
from ragplate.tasks.switch import faults

log = logging.getLogger("ragplate.switch")

PRUNE_COMMAND = "ragplate embeddings prune"


@dataclass
class PruneReport:
    """What a prune removed."""

    serving: str
    vector_rows: int = 0
    chunk_rows: int = 0
    source_rows: int = 0
    indexes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        """Plain data for the CLI and the artifacts."""
        return {"serving": self.serving, "vector_rows_deleted": self.vector_rows,
                "documentation_chunks_deleted": self.chunk_rows,
                "documentation_sources_deleted": self.source_rows,
                "indexes_dropped": self.indexes}


def activate(runtime: Runtime) -> SwitchState:
    """Make the target serve, in one transaction; returns the stored (idle) state. A
    switch already activated (a killed process that committed) is left as it is."""
    with state_transaction(runtime.engine, runtime.settings.state_lock_wait_seconds) as conn:
        state = read_state(conn, for_update=True)
        if state.status != "running" or state.phase != "activate" or state.target is None:
            return state
        settings_store.set_active_profile(conn, state.target)
        state.last = {
            "target": state.target, "previous": state.previous, "abandon": state.abandon,
            "abandoned": state.abandoned,
            "started_at": state.started_at.isoformat() if state.started_at else None,
            "activated_at": now().isoformat(), "records_embedded": state.records_embedded,
            "chunks_rewritten": state.chunks_rewritten, "gate": state.gate,
            "force_activate": state.force_activate, "flow_run_id": state.flow_run_id,
        }
        fresh = SwitchState(last=state.last, prune_pending=True)
        write_state(conn, fresh)
    try:
        moved = runtime.model_storage.activate(state.target)
    except Exception as exc:  # the target serves ragplate already; the aliases follow
        log.warning("the switch is activated, but the index aliases were not moved (%s); "
                    "run `%s` to move them", exc, PRUNE_COMMAND)
    else:
        if moved:
            log.info("aliases moved to %s: %s", state.target, ", ".join(moved))
    faults.checkpoint("activate")
    return fresh


def prune(runtime: Runtime) -> PruneReport:
    """Delete every row of a model key other than the serving one and drop those models'
    HNSW indexes. Refused (nothing changed) while a switch is running or failed: its
    target's rows, or the previous model's, are still needed."""
    engine = runtime.engine
    with state_transaction(engine, runtime.settings.state_lock_wait_seconds) as conn:
        state = read_state(conn, for_update=True)
        if state.status != "idle":
            raise SwitchRefusedError(f"refused: {state.summary()}; prune runs only when no "
                                     "switch is stored (finish it with --resume or --abandon)")
        serving = settings_store.active_profile_key(engine)
        report = PruneReport(serving)
        pruned = runtime.model_storage.prune(conn, serving)
        report.vector_rows, report.chunk_rows = pruned.vector_rows, pruned.chunk_rows
        report.source_rows = pruned.source_rows
        report.indexes += pruned.indexes or []
        state.prune_pending = False
        write_state(conn, state)
    return report


def prune_after_activation(runtime: Runtime) -> PruneReport | None:
    """The prune that follows an activation, after ``RAGPLATE_SWITCH_PRUNE_GRACE_SECONDS``
    (a search that read the previous serving model just before the activation still
    finds its index); a failure is logged with the command that retries it, and ``None``
    is returned (the activation stands)."""
    time.sleep(runtime.settings.switch_prune_grace_seconds)
    try:
        report = prune(runtime)
    except Exception as exc:
        log.warning("the switch is activated, but the rows and indexes of the other models "
                    "were not dropped (%s); run `%s` to retry", exc, PRUNE_COMMAND)
        return None
    faults.checkpoint("activate")
    return report

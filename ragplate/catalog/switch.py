"""The embedding-model switch: its state, phases, chunk plan and errors (no I/O).

A switch moves the serving embedding model to a *target* profile in five phases,
``preflight → embeddings → indexes → verify → activate``. The target's vectors and
documentation indexes are built beside the serving ones (rows keyed by model key, one
partial HNSW index per model key), so search keeps serving the current model until the
activation, which writes the serving-model setting in one transaction.

The state is one row of ``embedding_switch`` (see :data:`ragplate.catalog.schema.
embedding_switch`), written only under the state advisory lock.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

from ragplate.catalog.errors import RagplateError

Status = Literal["idle", "running", "failed"]
Phase = Literal["preflight", "embeddings", "indexes", "verify", "activate"]
PHASES: tuple[Phase, ...] = ("preflight", "embeddings", "indexes", "verify", "activate")
#: Why a switch stopped: ``check`` (a check did not hold), ``rounds`` (chunks or texts still
#: pending after the last round), ``stall`` (no chunk written for the stall time), ``gate``
#: (the evaluation gate refused), ``error`` (any other error, after its retries),
#: ``interrupted`` (the process running it died: seen by ``--resume``/``--abandon``).
FailureKind = Literal["check", "rounds", "stall", "gate", "error", "interrupted", "refused"]
ChunkKind = Literal["entity", "rag"]
Action = Literal["start", "resume", "abandon"]

#: Tries of a chunk or embedding batch task (the first and two retries).
CHUNK_TRIES = 3
#: Rounds a chunked phase re-dispatches the chunks still pending before it fails.
MAX_ROUNDS = 3
#: Name of the "queue" chunk task runs go through: their Prefect tag, so an operator can
#: put a concurrency limit on it (``prefect concurrency-limit create embeddings-index 1``).
INDEX_QUEUE = "embeddings-index"
#: The fixed text the verify phase queries every vector index with.
VERIFY_QUERY = "test"


def now() -> datetime:
    """The current time, timezone-aware (what the state stores)."""
    return datetime.now(UTC)


class ChunkSpec(BaseModel):
    """One unit of a chunk plan: a key range of an entity's records, or a range of
    documentation files (source labels) of one documentation index.

    Ranges are ``[low, high)``; ``None`` is an open end, so the first and the last range
    catch records or files created after the plan was made.
    """

    id: str = Field(description="<entity>#n or rag:<index>#n")
    kind: ChunkKind
    scope: str = Field(description="Entity name, or documentation index (developer, user).")
    low: str | None = None
    high: str | None = None
    written: bool = False
    attempts: int = Field(default=0, description="Times a task run started writing it.")

    def contains(self, value: str) -> bool:
        """Whether a source label falls in this range (documentation chunks compare
        labels as Python strings, in the order the sources are read)."""
        return (self.low is None or value >= self.low) and (self.high is None
                                                            or value < self.high)

    def describe(self) -> str:
        """How a failure names the chunk: ``cms.contents [1, 251)`` or
        ``rag:developer:[a.md, k.md)``."""
        low = "" if self.low is None else str(self.low)
        high = "" if self.high is None else str(self.high)
        if self.kind == "rag":
            return f"rag:{self.scope}:[{low}, {high})"
        return f"{self.scope} [{low}, {high})"


class ChunkPlan(BaseModel):
    """The chunks a chunked phase (``indexes`` or the ``verify`` refresh) writes."""

    plan_id: str
    purpose: Literal["indexes", "verify"]
    round: int = 0
    chunks: list[ChunkSpec] = Field(default_factory=list)

    def pending(self) -> list[ChunkSpec]:
        """Chunks not written yet, in plan order."""
        return [c for c in self.chunks if not c.written]

    def written_count(self) -> int:
        """How many chunks are written."""
        return sum(1 for c in self.chunks if c.written)

    def get(self, chunk_id: str) -> ChunkSpec | None:
        """The chunk called ``chunk_id``, if this plan has it."""
        return next((c for c in self.chunks if c.id == chunk_id), None)


class SwitchState(BaseModel):
    """Everything a switch stores between its steps (and across processes)."""

    status: Status = "idle"
    phase: Phase | None = None
    target: str | None = None
    previous: str | None = Field(
        default=None, description="The model serving when the switch was stored."
    )
    abandon: bool = Field(default=False, description="A return switch to the previous model.")
    abandoned: str | None = Field(
        default=None, description="The model an abandon gives up (its target before)."
    )
    force_activate: bool = False
    error: str | None = None
    failure: FailureKind | None = None
    after_embeddings: Phase = Field(
        default="indexes", description="Where the embeddings phase hands over."
    )
    prepare: bool = Field(
        default=True,
        description="The indexes phase must first do its once-only work (empty the target's "
        "documentation indexes, recreate its vector index) and make a new plan.",
    )
    plan: ChunkPlan | None = None
    embed_round: int = 0
    texts_total: int = 0
    texts_missing: int = 0
    records_embedded: int = 0
    chunks_rewritten: int = Field(
        default=0, description="Writes of a chunk beyond its first: a try that began "
        "writing and died before recording the chunk as written (a try that failed before "
        "writing anything does not count)."
    )
    docs_files: int = 0
    gate: dict[str, Any] | None = None
    prune_pending: bool = False
    flow_run_id: str | None = None
    started_at: datetime | None = None
    progress_at: datetime | None = Field(
        default=None, description="Last dispatch or chunk written (stall detection)."
    )
    last: dict[str, Any] | None = Field(
        default=None, description="Summary of the last switch that ended (activated)."
    )

    @property
    def active(self) -> bool:
        """A switch is stored (running or failed): writers embed with the target too."""
        return self.status != "idle"

    def chunk_counts(self) -> tuple[int, int, int]:
        """(written, pending, round) of the current plan, zeros without one."""
        if self.plan is None:
            return 0, 0, 0
        return self.plan.written_count(), len(self.plan.pending()), self.plan.round

    def summary(self) -> str:
        """One line: status, phase, target and chunk counts."""
        if self.status == "idle":
            return "no switch stored (idle)"
        written, pending, round_ = self.chunk_counts()
        text = f"{self.status} in phase {self.phase}, target {self.target}"
        if self.plan is not None:
            text += f", chunks written {written}, pending {pending}, round {round_}"
        return text


class SwitchRefusedError(RagplateError):
    """The switch command refused: nothing was changed."""

    http_status = 409
    exit_code = 2


class SwitchFailedError(RagplateError):
    """A switch stopped on a check, a stall, its rounds or the gate; the state says
    ``failed`` with the phase, and ``--resume`` or ``--abandon`` continue from there."""

    http_status = 500
    exit_code = 1


class StateLockTimeoutError(RagplateError):
    """The switch state lock was not obtained in ``state_lock_wait_seconds`` (retried)."""

    http_status = 503
    exit_code = 3

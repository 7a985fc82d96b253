"""The embeddings phase: embed with the target every searchable text that has no row of
the target carrying its current hash, in batches (one Prefect task run each), up to three
rounds. Rows of the serving model are never touched, so search keeps serving it."""

from __future__ import annotations

from dataclasses import dataclass

from ragplate.catalog.entities import entities, get_entity
from ragplate.catalog.profiles import get_profile
from ragplate.catalog.switch import SwitchState
from ragplate.infra.records.texts import RecordText, missing_embeddings
from ragplate.infra.runtime import Runtime
from ragplate.infra.switch_state import read_state
from ragplate.tasks.records.texts import embed_record_texts
from ragplate.tasks.switch import faults
from ragplate.tasks.switch.state import touch_progress, update_state


@dataclass(frozen=True)
class TextBatch:
    """Records of one entity whose missing texts one task run embeds."""

    entity: str
    record_keys: tuple[str, ...]
    texts: int

    @property
    def id(self) -> str:
        """``<entity>:<first key>..<last key>`` (the task run's name)."""
        return f"{self.entity}:{self.record_keys[0]}..{self.record_keys[-1]}"


def missing_texts(runtime: Runtime, target: str) -> list[RecordText]:
    """Every searchable text without a current row of ``target``, entity by entity."""
    texts: list[RecordText] = []
    with runtime.engine.connect() as conn:
        for entity in entities(runtime.settings).values():
            texts += missing_embeddings(conn, entity, target)
    return texts


def batches(texts: list[RecordText], size: int) -> list[TextBatch]:
    """Whole records (all their locales) in batches of about ``size`` texts."""
    result: list[TextBatch] = []
    keys: list[str] = []
    count, entity = 0, None
    for text in texts:
        new_record = not keys or keys[-1] != text.record_key or entity != text.entity
        if new_record and keys and (count >= size or entity != text.entity):
            result.append(TextBatch(str(entity), tuple(keys), count))
            keys, count = [], 0
        if new_record:
            keys.append(text.record_key)
        entity = text.entity
        count += 1
    if keys:
        result.append(TextBatch(str(entity), tuple(keys), count))
    return result


def describe(texts: list[RecordText], limit: int = 20) -> str:
    """``cms.contents#12 (en), …`` for a failure message."""
    names = [f"{t.entity}#{t.record_key} ({t.locale})" for t in texts[:limit]]
    more = f" and {len(texts) - limit} more" if len(texts) > limit else ""
    return ", ".join(names) + more


def _expects(state: SwitchState, target: str) -> bool:
    return state.status == "running" and state.phase == "embeddings" and state.target == target


def embed_batch(runtime: Runtime, target: str, batch: TextBatch) -> int:
    """Embed the batch's texts still missing a current row of ``target``; returns rows
    written. Skipped (0) when the state no longer expects it (the switch failed, was
    abandoned or moved on)."""
    engine = runtime.engine
    if not _expects(read_state(engine), target):
        return 0
    faults.checkpoint("embeddings")
    with engine.connect() as conn:
        entity = get_entity(batch.entity, runtime.settings)
        texts = missing_embeddings(conn, entity, target, keys=list(batch.record_keys))
    profile = get_profile(target)
    # The target's HNSW index is built once the bulk of its rows is loaded (indexes phase).
    written = embed_record_texts(engine, texts, profile=profile,
                                 embedder=runtime.embedder(profile), ensure_index=False)

    def record(state: SwitchState) -> None:
        if _expects(state, target):
            state.records_embedded += written
            touch_progress(state)

    update_state(engine, runtime.settings.state_lock_wait_seconds, record)
    faults.checkpoint("embeddings")
    return written

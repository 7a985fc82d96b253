"""The indexes phase and the chunks it (and the verify refresh) writes.

Everything is built *beside* the serving model: the target's rows in ``model_embeddings``
and ``rag_chunks``, its own partial HNSW indexes. The once-only work (:func:`prepare`)
recreates the target's vector index on ``model_embeddings`` (after the bulk load of the
embeddings phase: building once is several times faster than maintaining it), empties the
target's documentation indexes and stores the chunk plan. A chunk (:func:`write_chunk`) is
idempotent: an entity chunk makes the target's rows of its key range exact (embeds what is
missing or stale, deletes rows of records or locales no longer searchable); a
documentation chunk indexes the files of its range with the target, replacing each file's
chunks (what ``index-docs`` does for one file). When the target *is* the serving model (a
return switch after ``--abandon``) nothing serving is ever emptied.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from ragplate.catalog.documents import INDEXES, Document
from ragplate.catalog.entities import entities, get_entity
from ragplate.catalog.profiles import EmbeddingProfile, get_profile
from ragplate.catalog.switch import ChunkPlan, ChunkSpec, SwitchState
from ragplate.infra import settings_store
from ragplate.infra.records.texts import key_ranges, record_texts
from ragplate.infra.records.vectors import delete_stale_in_range
from ragplate.infra.runtime import Runtime
from ragplate.infra.stores.base import build_search_index
from ragplate.infra.switch_state import read_state
from ragplate.tasks.indexing import index as indexing
from ragplate.tasks.indexing.read import developer_corpus, user_corpus
from ragplate.tasks.indexing.split import make_splitter, split_documents
from ragplate.tasks.records.search_index import refresh_records
from ragplate.tasks.records.texts import embed_record_texts
from ragplate.tasks.switch import faults
from ragplate.tasks.switch.documentation import configured_sources
from ragplate.tasks.switch.state import touch_progress, update_state

#: The stores every process shares, whose indexes the switch builds beside the serving ones.
SHARED_STORES = ("pgvector", "elasticsearch")


def doc_indexes(runtime: Runtime) -> tuple[str, ...]:
    """The documentation indexes the switch rebuilds: both, on a shared store (pgvector,
    Elasticsearch). A filesystem or memory store is not rebuilt (run ``index-docs --full``
    after)."""
    return INDEXES if runtime.settings.vector_store in SHARED_STORES else ()


def corpus(runtime: Runtime, index: str, documents: Sequence[Document] | None = None
           ) -> list[Document]:
    """The documents of one documentation index (every configured root), in label order."""
    docs = list(documents) if documents is not None else configured_sources(runtime)
    if index == "developer":
        return developer_corpus(docs)
    return user_corpus(docs, runtime.policy)


def entity_chunks(runtime: Runtime) -> list[ChunkSpec]:
    """Key ranges of ``index_chunk_size`` records per entity, ids ``<entity>#n``."""
    chunks: list[ChunkSpec] = []
    with runtime.engine.connect() as conn:
        for entity in entities(runtime.settings).values():
            ranges = key_ranges(conn, entity, chunk_size=runtime.settings.index_chunk_size)
            chunks += [ChunkSpec(id=f"{entity.name}#{n}", kind="entity", scope=entity.name,
                                 low=r.key_from, high=r.key_to)
                       for n, r in enumerate(ranges, 1)]
    return chunks


def rag_chunks(runtime: Runtime) -> list[ChunkSpec]:
    """Ranges of ``rag_chunk_size`` files in source-name order per documentation index,
    open at both ends, ids ``rag:<index>#n``."""
    indexes = doc_indexes(runtime)
    if not indexes:
        return []
    documents = configured_sources(runtime)
    size = runtime.settings.rag_chunk_size
    chunks: list[ChunkSpec] = []
    for index in indexes:
        labels = [d.source for d in corpus(runtime, index, documents)]
        bounds: list[str | None] = [None, *labels[size::size]]
        chunks += [ChunkSpec(id=f"rag:{index}#{n}", kind="rag", scope=index, low=low,
                             high=bounds[n] if n < len(bounds) else None)
                   for n, low in enumerate(bounds, 1)]
    return chunks


def prepare(runtime: Runtime, state: SwitchState) -> ChunkPlan:
    """The once-only work of the indexes phase; returns the plan to store."""
    target = get_profile(state.target or "")
    serving = settings_store.active_profile_key(runtime.engine)
    beside = target.key != serving
    with runtime.engine.begin() as conn:
        runtime.model_storage.prepare(conn, target, beside=beside)
    if beside:
        for index in doc_indexes(runtime):
            runtime.store(index, target).reset()
    faults.checkpoint("indexes")
    return ChunkPlan(plan_id=uuid.uuid4().hex, purpose="indexes",
                     chunks=entity_chunks(runtime) + rag_chunks(runtime))


def finish(runtime: Runtime, state: SwitchState) -> None:
    """Build the target's documentation HNSW indexes a first load deferred."""
    target = get_profile(state.target or "")
    for index in doc_indexes(runtime):
        build_search_index(runtime.store(index, target))


def write_entity_range(runtime: Runtime, profile: EmbeddingProfile, chunk: ChunkSpec) -> int:
    """Make the target's rows of the chunk's key range exact; returns rows written."""
    engine = runtime.engine
    entity = get_entity(chunk.scope, runtime.settings)
    with engine.connect() as conn:
        texts = record_texts(conn, entity, key_from=chunk.low, key_to=chunk.high)
    written = embed_record_texts(engine, texts, profile=profile,
                                 embedder=runtime.embedder(profile))
    wanted = {(t.record_key, t.locale) for t in texts}
    with engine.begin() as conn:
        delete_stale_in_range(conn, entity=entity, model_key=profile.key, low=chunk.low,
                              high=chunk.high, keep=wanted)
    # On Elasticsearch, the target's index of the range is written from those rows.
    refresh_records(runtime.record_index, engine, entity, [profile], low=chunk.low,
                    high=chunk.high)
    return written


def write_rag_range(runtime: Runtime, profile: EmbeddingProfile, chunk: ChunkSpec) -> int:
    """Index the documentation files of the chunk's range with the target: files whose
    stored hash (content and splitter) differs are re-split, embedded and replaced; files
    gone from their root are deleted. Returns chunks written."""
    roots = runtime.settings.all_roots()
    documents = [d for d in corpus(runtime, chunk.scope) if chunk.contains(d.source)]
    store = runtime.store(chunk.scope, profile)
    stored = {s: r for s, r in store.sources().items() if chunk.contains(s)}
    splitter = make_splitter(runtime.settings)
    weight = runtime.settings.docs_context_weight
    # As index-docs: the next incremental run finds them unchanged.
    salt = indexing.index_salt(splitter, weight)
    recipe = indexing.vector_recipe(weight)
    plan = indexing.plan_index(chunk.scope, documents, stored, profile.key, full=False,
                               prefixes=list(roots), salt=salt, recipe=recipe)
    pieces = split_documents(plan.changed, splitter)
    embedder = runtime.embedder(profile)
    written = 0
    for batch in indexing.make_batches(plan.changed, pieces, profile.key, salt=salt,
                                       batch_chunks=runtime.settings.index_batch_chunks,
                                       recipe=recipe):
        written += indexing.write_batch(store, batch,
                                        indexing.embed_batch(embedder, batch, weight))
    indexing.record_sources(store, plan.unrecorded)
    indexing.delete_sources(store, plan.deleted)
    return written


def _expects(state: SwitchState, plan_id: str, chunk_id: str) -> ChunkSpec | None:
    """The chunk when the state still wants it written, else ``None`` (written already,
    another plan, a switch failed, abandoned or finished)."""
    plan = state.plan
    if state.status != "running" or plan is None or plan.plan_id != plan_id:
        return None
    if state.phase != plan.purpose:
        return None
    chunk = plan.get(chunk_id)
    return None if chunk is None or chunk.written else chunk


def write_chunk(runtime: Runtime, plan_id: str, chunk_id: str) -> str:
    """Write one chunk of the stored plan and record it as written; ``skipped`` when the
    state no longer expects it. Safe to run twice: the second run finds nothing to do."""
    engine, wait = runtime.engine, runtime.settings.state_lock_wait_seconds

    def begin(state: SwitchState) -> ChunkSpec | None:
        chunk = _expects(state, plan_id, chunk_id)
        return None if chunk is None else chunk.model_copy()

    def start_writing(state: SwitchState) -> bool:
        # Counted here, not at the start: a try that failed before writing anything
        # (its embedder unavailable, say) rewrites nothing when the next one writes.
        chunk = _expects(state, plan_id, chunk_id)
        if chunk is not None:
            chunk.attempts += 1
        return chunk is not None

    state, chunk = update_state(engine, wait, begin)
    if chunk is None:
        return "skipped"
    phase = state.phase or "indexes"
    faults.chunk(chunk_id)
    faults.checkpoint(phase)
    if not update_state(engine, wait, start_writing)[1]:
        return "skipped"
    profile = get_profile(state.target or "")
    if chunk.kind == "entity":
        write_entity_range(runtime, profile, chunk)
    else:
        write_rag_range(runtime, profile, chunk)
    faults.checkpoint(phase)

    def record(current: SwitchState) -> bool:
        stored = _expects(current, plan_id, chunk_id)
        if stored is None:
            return False
        stored.written = True
        current.chunks_rewritten += max(0, stored.attempts - 1)
        touch_progress(current)
        return True

    _, recorded = update_state(engine, wait, record)
    faults.checkpoint(phase)
    return "written" if recorded else "skipped"


def pending_ids(runtime: Runtime, plan_id: str) -> list[str]:
    """Ids of the stored plan's chunks still pending (none when the plan changed)."""
    state = read_state(runtime.engine)
    if state.plan is None or state.plan.plan_id != plan_id:
        return []
    return [c.id for c in state.plan.pending()]

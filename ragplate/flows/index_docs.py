"""``index-rag-docs``: read and validate every source, then split, embed and write."""

from __future__ import annotations

import time
from typing import Any, Literal, cast
from uuid import UUID

from prefect import flow
from prefect.artifacts import (
    create_markdown_artifact,
    create_progress_artifact,
    create_table_artifact,
    update_progress_artifact,
)

from ragplate.catalog.documents import Document
from ragplate.catalog.errors import ServiceError
from ragplate.infra import locks
from ragplate.infra.environment import get_settings
from ragplate.infra.models.base import Embedder
from ragplate.infra.runtime import Runtime
from ragplate.infra.stores.base import DocumentStore
from ragplate.infra.worker_watch import watch_worker
from ragplate.tasks import progress
from ragplate.tasks.flow_runs import crash_orphans
from ragplate.tasks.indexing import index, steps
from ragplate.tasks.indexing.split import Splitter, make_splitter
from ragplate.tasks.indexing.targets import indexes_for, resolve_roots
from ragplate.tasks.indexing.up_to_date import BUSY, FLOW_NAME
from ragplate.tasks.retries import as_is

IndexProfile = Literal["developer", "user", "all"]


@flow(name=FLOW_NAME, log_prints=True)
def index_rag_docs(
    profile: IndexProfile = "all",
    path: str | None = None,
    prefix: str | None = None,
    full: bool = False,
    allow_empty: bool = False,
) -> list[dict[str, Any]]:
    """Index documentation into the developer and/or user index.

    Every source is read and validated first: an invalid one stops the run before
    anything is written. Unchanged sources are skipped; vanished ones are deleted, except
    that a root without any Markdown file deletes nothing unless ``allow_empty``.
    """
    watch_worker()  # this run ends with the worker that started it
    runtime = Runtime(get_settings())
    with locks.index_lock(runtime.engine) as acquired:
        if not acquired:
            raise ServiceError(BUSY)
        crash_orphans(FLOW_NAME)
        return _index(runtime, profile, path, prefix, full, allow_empty)


def _index(runtime: Runtime, profile: IndexProfile, path: str | None, prefix: str | None,
           full: bool, allow_empty: bool) -> list[dict[str, Any]]:
    """The run under the index lock: read, plan, check, then write index by index."""
    targets = indexes_for(profile)
    roots = resolve_roots(runtime.settings, path, prefix)
    others = [p for p in runtime.settings.all_roots() if p not in roots]
    documents = steps.read_sources(roots, runtime.settings.docs_max_file_bytes)
    model = runtime.active_profile()
    embedder = runtime.embedder(model)
    splitter = make_splitter(runtime.settings)
    weight = runtime.settings.docs_context_weight
    # The splitter's configuration and the vector recipe: a change re-embeds every source.
    salt = index.index_salt(splitter, weight)
    recipe = index.vector_recipe(weight)
    stores = {name: runtime.store(name, model) for name in targets}
    stored = {name: steps.stored_sources(store) for name, store in stores.items()}
    corpora = {name: steps.select_corpus(name, as_is(documents), runtime.policy)
               for name in targets}
    plans = [index.plan_index(name, corpora[name], stored[name], model.key, full=full,
                              prefixes=list(roots), other_prefixes=others, salt=salt,
                              recipe=recipe)
             for name in targets]
    steps.check_emptied_roots(as_is(plans), as_is(stored), as_is(documents), roots, others,
                              allow_empty)
    writes = any(plan.changed for plan in plans)
    if writes:
        _load_model(embedder)  # a step of its own, before any index's clock starts
    # Called from a sync flow, Prefect's async_dispatch returns the UUID, not a coroutine.
    # A run with nothing to embed has no progress to show.
    progress_id = (cast(UUID, create_progress_artifact(
        0.0, key="index-rag-docs-progress", description="chunks embedded and written"))
        if writes else None)
    summaries = [_write_index(runtime, plan, stores[plan.index], corpora[plan.index],
                              embedder, splitter, salt, recipe, progress_id)
                 for plan in plans]
    if progress_id is not None:
        update_progress_artifact(progress_id, 100.0)
    rows = [s.as_row() for s in summaries]
    create_table_artifact([index.headed(row) for row in rows], key="index-rag-docs-summary",
                          description=f"index-rag-docs with {model.key}")
    create_markdown_artifact(_markdown(rows, model.key, full), key="index-rag-docs-report")
    return rows


def _write_index(runtime: Runtime, plan: index.IndexPlan, store: DocumentStore,
                 corpus: list[Document], embedder: Embedder, splitter: Splitter, salt: str,
                 recipe: str,
                 progress_id: UUID | None) -> index.IndexSummary:
    """One index's writes: its changed sources embedded batch by batch, then the records,
    deletions and search index. A step with nothing to do is not run: each task run costs
    Prefect a few API calls."""
    index_name = plan.index
    weight = runtime.settings.docs_context_weight
    started = time.perf_counter()
    chunks = steps.split(as_is(plan.changed), splitter) if plan.changed else []
    # The bar shows from the index's start (its clock is the summary's), not from the
    # first batch written, which may take a minute.
    if chunks:
        progress.report(f"{index_name} index", 0, len(chunks))
    batches = index.make_batches(plan.changed, chunks, store.profile.key,
                                 batch_chunks=runtime.settings.index_batch_chunks, salt=salt,
                                 recipe=recipe)
    summary = index.IndexSummary(index_name, sources_read=len(corpus),
                                 unchanged=len(plan.unchanged), reembedded=len(plan.changed))
    total = len(chunks)
    for batch in batches:
        embedded = steps.embed_batch(embedder, as_is(batch), weight)
        summary.chunks_written += steps.write_batch(store, as_is(batch), as_is(embedded))
        progress.report(f"{index_name} index", summary.chunks_written, total)
        if progress_id is not None:
            update_progress_artifact(progress_id, _percent(summary, total))
    if plan.unrecorded:
        steps.record_sources(store, as_is(plan.unrecorded))
    if plan.deleted:
        steps.delete_sources(store, as_is(plan.deleted))
    summary.deleted = len(plan.deleted)
    summary.extra["chunks_in_index"] = steps.finalize_index(store)
    summary.seconds = time.perf_counter() - started
    return summary


#: The progress label of the model load, shown before the first index is embedded.
MODEL_STEP = "loading the embedding model"


def _load_model(embedder: object) -> None:
    """Load an in-process model now, as a progress step (a server's model has nothing to
    load): otherwise the first batch would load it while the bar stands still."""
    load = getattr(embedder, "load", None)
    if load is None:
        return
    progress.report(MODEL_STEP, 0, 1)
    load()
    progress.report(MODEL_STEP, 1, 1)


def _percent(summary: index.IndexSummary, total: int) -> float:
    return 100.0 if total == 0 else min(100.0, 100.0 * summary.chunks_written / total)


def _markdown(rows: list[dict[str, Any]], model_key: str, full: bool) -> str:
    mode = "full rebuild" if full else "incremental"
    head = f"# index-rag-docs\n\nModel `{model_key}`, {mode}.\n\n"
    if not rows:
        return head
    table = [index.headed(row) for row in rows]
    keys = list(table[0])
    lines = ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
    lines += ["| " + " | ".join(str(r[k]) for k in keys) + " |" for r in table]
    return head + "\n".join(lines) + "\n"

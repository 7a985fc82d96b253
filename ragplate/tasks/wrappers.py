"""Thin Prefect ``@task`` wrappers over the plain steps in this package.

Only I/O steps retry (reading files, the database, a remote embeddings server); a
deterministic refusal (bad input, a wrong vector length) fails at once.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

from prefect import Task, get_run_logger, task
from prefect.cache_policies import NO_CACHE

from ragplate.catalog.documents import AudiencePolicy, Chunk, Document
from ragplate.catalog.errors import ConfigurationError, DimensionMismatchError, InvalidInputError
from ragplate.infra.embedders.base import Embedder
from ragplate.infra.stores.base import DocumentStore, EmbeddedChunk, SourceRecord
from ragplate.tasks import index, read
from ragplate.tasks.split import Splitter, split_documents

IO_RETRY_DELAYS: list[float] = [2, 5, 10]
_PERMANENT = (InvalidInputError, DimensionMismatchError, ConfigurationError)


def retry_unless_permanent(task_: Any, task_run: Any, state: Any) -> bool:
    """Retry an I/O step unless it failed on bad input, which a retry cannot fix."""
    try:
        state.result()
    except _PERMANENT:
        return False
    except Exception:
        return True
    return True


P = ParamSpec("P")
R = TypeVar("R")


def _io_task(name: str) -> Callable[[Callable[P, R]], Task[P, R]]:
    """``@task`` for an I/O step: retried (unless permanent), never cached."""
    return task(
        name=name,
        retries=3,
        retry_delay_seconds=IO_RETRY_DELAYS,
        retry_condition_fn=retry_unless_permanent,
        cache_policy=NO_CACHE,
    )


@_io_task("read-sources")
def read_sources(roots: Mapping[str, Path]) -> list[Document]:
    """Read and validate every source (see :func:`ragplate.tasks.read.read_sources`)."""
    return read.read_sources(roots)


@task(name="select-corpus", cache_policy=NO_CACHE)
def select_corpus(
    index_name: str, documents: list[Document], policy: AudiencePolicy
) -> list[Document]:
    """The developer corpus (with defaults) or the user corpus (policy-admitted)."""
    if index_name == "developer":
        return read.developer_corpus(documents)
    return read.user_corpus(documents, policy)


@task(name="check-emptied-roots", cache_policy=NO_CACHE)
def check_emptied_roots(
    plans: Sequence[index.IndexPlan],
    stored: Mapping[str, Mapping[str, SourceRecord]],
    documents: Sequence[Document],
    roots: Mapping[str, Path],
    other_prefixes: Sequence[str],
    allow_empty: bool,
) -> None:
    """Refuse a run in which a root without Markdown files would delete what it indexed
    (see :func:`ragplate.tasks.index.refuse_emptied_roots`), unless ``allow_empty``."""
    emptied = index.emptied_roots(documents, list(roots))
    if not emptied:
        return
    deletions = {
        plan.index: index.emptied_root_deletions(
            plan, stored[plan.index], emptied, prefixes=list(roots),
            other_prefixes=other_prefixes)
        for plan in plans
    }
    deletions = {name: found for name, found in deletions.items() if found}
    for prefix in emptied:
        get_run_logger().warning("documentation root %s (prefix %r) holds no Markdown file",
                                 roots[prefix], prefix)
    if not allow_empty:
        index.refuse_emptied_roots(deletions, roots)


@_io_task("stored-sources")
def stored_sources(store: DocumentStore) -> dict[str, SourceRecord]:
    """What the index already holds, per source."""
    return store.sources()


@task(name="split", cache_policy=NO_CACHE)
def split(documents: Sequence[Document], splitter: Splitter) -> list[Chunk]:
    """Chunks of every changed document."""
    return split_documents(documents, splitter)


@_io_task("embed-batch")
def embed_batch(embedder: Embedder, batch: index.Batch,
                context_weight: float) -> list[EmbeddedChunk]:
    """Passage vectors for one batch."""
    return index.embed_batch(embedder, batch, context_weight)


@_io_task("write-batch")
def write_batch(
    store: DocumentStore, batch: index.Batch, embedded: list[EmbeddedChunk]
) -> int:
    """Replace the batch's sources in one transaction."""
    return index.write_batch(store, batch, embedded)


@_io_task("record-sources")
def record_sources(store: DocumentStore, records: list[SourceRecord]) -> int:
    """Record the vector recipe and root of unchanged sources stored before they were
    recorded (their chunks stay)."""
    return index.record_sources(store, records)


@_io_task("delete-sources")
def delete_sources(store: DocumentStore, sources: list[str]) -> int:
    """Delete sources that disappeared from their roots."""
    return index.delete_sources(store, sources)


@_io_task("finalize-index")
def finalize_index(store: DocumentStore) -> int:
    """Build the search index if a first load deferred it; returns the chunk count."""
    ensure = getattr(store, "ensure_search_index", None)
    if ensure is not None:
        ensure()
    return store.count()

"""Thin Prefect ``@task`` wrappers over the indexing steps (:mod:`.read`, :mod:`.split`,
:mod:`.index`). Only I/O steps retry (see :mod:`ragplate.tasks.retries`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from prefect import get_run_logger, task
from prefect.cache_policies import NO_CACHE

from ragplate.catalog.documents import AudiencePolicy, Chunk, Document
from ragplate.catalog.errors import StoreError
from ragplate.infra.models.base import Embedder
from ragplate.infra.stores.base import (
    DocumentStore,
    EmbeddedChunk,
    SourceRecord,
    build_search_index,
    recount_words,
)
from ragplate.tasks.indexing import index, read
from ragplate.tasks.indexing.split import Splitter, split_documents
from ragplate.tasks.retries import io_task


@io_task("read-sources")
def read_sources(roots: Mapping[str, Path], max_bytes: int) -> list[Document]:
    """Read and validate every source (see :func:`ragplate.tasks.indexing.read.read_sources`)."""
    return read.read_sources(roots, max_bytes=max_bytes)


@task(name="select-corpus", cache_policy=NO_CACHE)
def select_corpus(
    index_name: str, documents: list[Document], policy: AudiencePolicy
) -> list[Document]:
    """The developer corpus (with defaults) or the user corpus (policy-admitted)."""
    return read.corpus_for(index_name, documents, policy)


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
    (see :func:`ragplate.tasks.indexing.index.refuse_emptied_roots`), unless ``allow_empty``."""
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


@io_task("stored-sources")
def stored_sources(store: DocumentStore) -> dict[str, SourceRecord]:
    """What the index already holds, per source."""
    return store.sources()


@task(name="split", cache_policy=NO_CACHE)
def split(documents: Sequence[Document], splitter: Splitter) -> list[Chunk]:
    """Chunks of every changed document."""
    return split_documents(documents, splitter)


@io_task("embed-batch")
def embed_batch(embedder: Embedder, batch: index.Batch,
                context_weight: float) -> list[EmbeddedChunk]:
    """Passage vectors for one batch."""
    return index.embed_batch(embedder, batch, context_weight)


@io_task("write-batch")
def write_batch(
    store: DocumentStore, batch: index.Batch, embedded: list[EmbeddedChunk]
) -> int:
    """Replace the batch's sources in one transaction."""
    return index.write_batch(store, batch, embedded)


@io_task("record-sources")
def record_sources(store: DocumentStore, records: list[SourceRecord]) -> int:
    """Record the vector recipe and root of unchanged sources stored before they were
    recorded (their chunks stay)."""
    return index.record_sources(store, records)


@io_task("delete-sources")
def delete_sources(store: DocumentStore, sources: list[str]) -> int:
    """Delete sources that disappeared from their roots."""
    return index.delete_sources(store, sources)


@io_task("finalize-index")
def finalize_index(store: DocumentStore) -> int:
    """Build the search index if a first load deferred it, and count again the words of
    chunks another release counted (their stored text is read again, nothing is
    re-embedded); returns the chunk count."""
    build_search_index(store)
    name = getattr(store, "index", "the")
    try:
        recounted = recount_words(store)
    except StoreError as exc:
        # The counts only weigh the coverage check's words: the writes stand, and the next
        # run (its up-to-date check sees the chunks still to count) tries again.
        get_run_logger().warning("%s index: the words of chunks another release counted "
                                 "could not be counted again (%s); the next index-docs "
                                 "tries again", name, exc)
    else:
        if recounted:
            get_run_logger().info(
                "%s index: counted again the words of %d chunks another release had "
                "counted (the assistant's coverage check weighs words by these counts)",
                name, recounted)
    return store.count()

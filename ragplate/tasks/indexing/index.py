"""Plain indexing steps: plan, batch, embed, write. The flow sequences them."""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from ragplate.catalog.documents import Chunk, Document
from ragplate.catalog.errors import EmptyRootError
from ragplate.catalog.settings import DEFAULT_DOCS_CONTEXT_WEIGHT
from ragplate.infra.models.base import Embedder
from ragplate.infra.stores.base import DocumentStore, EmbeddedChunk, SourceRecord


@dataclass(frozen=True)
class IndexPlan:
    """What an indexing run does to one index: sources to (re-)embed, unchanged, deleted."""

    index: str
    changed: list[Document]
    unchanged: list[str]
    deleted: list[str]
    full: bool
    #: Unchanged sources stored before their recipe or root was recorded, with both filled
    #: in: the fingerprint matched and includes the recipe, so it is the current one.
    unrecorded: list[SourceRecord] = field(default_factory=list)


@dataclass(frozen=True)
class Batch:
    """Whole sources whose chunks are embedded and written together."""

    sources: list[SourceRecord]
    chunks: list[Chunk]


@dataclass
class IndexSummary:
    """Counts of one run over one index."""

    index: str
    sources_read: int = 0
    unchanged: int = 0
    reembedded: int = 0
    deleted: int = 0
    chunks_written: int = 0
    seconds: float = 0.0
    extra: dict[str, float] = field(default_factory=dict)

    def as_row(self) -> dict[str, object]:
        """The counts as data (``--json``, the flow's result): keys a client can name
        without quoting; :func:`headed` gives the row people read."""
        return {
            "index": self.index,
            "sources_read": self.sources_read,
            "unchanged": self.unchanged,
            "re_embedded": self.reembedded,
            "deleted": self.deleted,
            "chunks_written": self.chunks_written,
            "seconds": round(self.seconds, 2),
        }


#: A summary row's column headings in tables and artifacts, where people read them.
HEADINGS = {"sources_read": "sources read", "re_embedded": "re-embedded",
            "chunks_written": "chunks written"}


def headed(row: dict[str, object]) -> dict[str, object]:
    """A summary row (:meth:`IndexSummary.as_row`) with its keys as column headings."""
    return {HEADINGS.get(key, key): value for key, value in row.items()}


#: How much of its document a chunk's stored vector carries by default
#: (``RAGPLATE_DOCS_CONTEXT_WEIGHT``): the vector is the chunk's own direction plus this
#: weight times the mean direction of its document's chunks (then put back at the chunk's
#: length). A passage of a long guide is then found as part of that guide, not only by its
#: own words: a chunk's text alone often omits what its document is about. 1.0 is the plain
#: average of the two; 0 stores the chunk's own vector; the default 0.5 was chosen by
#: ``ragplate bench retrieval``.
DOCUMENT_CONTEXT_WEIGHT = DEFAULT_DOCS_CONTEXT_WEIGHT


def vector_recipe(weight: float = DOCUMENT_CONTEXT_WEIGHT) -> str:
    """Names how stored vectors are made; part of every source's fingerprint, so a change
    re-embeds every source instead of mixing vectors of two recipes in one index."""
    return f"document-context={float(weight)}"


#: The default recipe's name.
VECTOR_RECIPE = vector_recipe()


def index_salt(splitter: object, context_weight: float = DOCUMENT_CONTEXT_WEIGHT) -> str:
    """The fingerprint salt of an index run: the splitter's configuration and the vector
    recipe, so that changing either re-embeds every source."""
    return f"{splitter!r}|{vector_recipe(context_weight)}"


def fingerprint(content_hash: str, salt: str = "") -> str:
    """The hash stored per source: the file's content hash, combined with ``salt`` (the
    splitter configuration) so that changing how documents are split re-embeds them."""
    if not salt:
        return content_hash
    return hashlib.sha256(f"{content_hash}|{salt}".encode()).hexdigest()


def in_scope(source: str, prefixes: Sequence[str], other_prefixes: Sequence[str],
             root: str | None = None) -> bool:
    """Whether ``source`` belongs to one of the roots being read in this run.

    A run over some roots must not delete what other roots indexed: only sources of the
    roots read now can have "disappeared". ``root`` is the root prefix the source was
    recorded with. For sources stored before roots were recorded (``None``) the label
    decides: an empty prefix (bare relative labels) owns every label that no other
    configured root owns.
    """
    if root is not None:
        return root in prefixes
    for prefix in prefixes:
        if prefix == "":
            if not any(source.startswith(f"{other}/") for other in other_prefixes if other):
                return True
        elif source.startswith(f"{prefix}/"):
            return True
    return False


def plan_index(
    index: str,
    documents: Sequence[Document],
    stored: Mapping[str, SourceRecord],
    model_key: str,
    *,
    full: bool,
    prefixes: Sequence[str] = ("",),
    other_prefixes: Sequence[str] = (),
    salt: str = "",
    recipe: str = VECTOR_RECIPE,
) -> IndexPlan:
    """Decide per source: a source whose content hash and model are unchanged is skipped,
    a source no longer in its root is deleted; ``full`` re-embeds everything. ``salt``
    must name ``recipe`` (see :func:`index_salt`).

    ``prefixes`` are the roots read in this run; ``other_prefixes`` the configured roots
    not read now (see :func:`in_scope`).
    """
    present = {d.source for d in documents}
    gone = sorted(s for s in set(stored) - present
                  if in_scope(s, prefixes, other_prefixes, stored[s].root))
    if full:
        return IndexPlan(index, list(documents), [], gone, True)
    changed, unchanged, unrecorded = [], [], []
    for document in documents:
        record = stored.get(document.source)
        if (
            record is not None
            and record.content_hash == fingerprint(document.content_hash, salt)
            and record.model_key == model_key
        ):
            unchanged.append(document.source)
            if not record.vector_recipe or record.root is None:
                unrecorded.append(replace(record, vector_recipe=recipe, root=document.root))
        else:
            changed.append(document)
    return IndexPlan(index, changed, unchanged, gone, False, unrecorded)


def emptied_roots(documents: Sequence[Document], prefixes: Sequence[str]) -> list[str]:
    """The roots read in this run (by prefix) from which no Markdown file was read."""
    read = {d.root for d in documents}
    return [p for p in prefixes if p not in read]


def root_sources(
    stored: Mapping[str, SourceRecord],
    roots: Sequence[str],
    *,
    prefixes: Sequence[str],
    other_prefixes: Sequence[str] = (),
) -> dict[str, list[str]]:
    """Per root of ``roots`` (a subset of ``prefixes``, all the roots read), the stored
    sources that belong to it (see :func:`in_scope`); roots without any are left out."""
    found: dict[str, list[str]] = {}
    for prefix in roots:
        others = [*other_prefixes, *(p for p in prefixes if p != prefix)]
        own = [s for s, record in stored.items() if in_scope(s, [prefix], others, record.root)]
        if own:
            found[prefix] = own
    return found


def emptied_root_deletions(
    plan: IndexPlan,
    stored: Mapping[str, SourceRecord],
    emptied: Sequence[str],
    *,
    prefixes: Sequence[str],
    other_prefixes: Sequence[str] = (),
) -> dict[str, list[str]]:
    """Per emptied root, the sources ``plan`` would delete from it (roots without any
    are left out). ``prefixes`` are all the roots read in this run."""
    deleted = {s: stored[s] for s in plan.deleted}
    return root_sources(deleted, emptied, prefixes=prefixes, other_prefixes=other_prefixes)


def refuse_emptied_roots(
    deletions: Mapping[str, Mapping[str, Sequence[str]]], paths: Mapping[str, Path]
) -> None:
    """Raise :class:`EmptyRootError` when a root that read no Markdown file would delete
    sources of an index (``deletions``: index -> root prefix -> sources)."""
    problems = [
        f"documentation root {paths[prefix]} (prefix {prefix!r}) holds no Markdown file, "
        f"but the {index} index holds {len(sources)} of its sources"
        for index, per_root in deletions.items()
        for prefix, sources in per_root.items()
    ]
    if problems:
        raise EmptyRootError(
            "; ".join(problems) + ". Nothing was changed. An empty root is usually a missing "
            "checkout or mount: restore it, or run again with --allow-empty to delete them."
        )


def make_batches(
    documents: Sequence[Document],
    chunks: Sequence[Chunk],
    model_key: str,
    *,
    batch_chunks: int,
    salt: str = "",
    recipe: str = VECTOR_RECIPE,
) -> list[Batch]:
    """Group whole sources into batches of about ``batch_chunks`` chunks; each source's
    record carries ``recipe``, the :func:`vector_recipe` its vectors are embedded with.

    A batch never splits a source (replace-by-source deletes a source before adding it,
    so a split source would lose its first part); a larger source travels alone. A source
    with no chunk (an empty file) still gets its record, so it is not re-read every run.
    """
    by_source: dict[str, list[Chunk]] = {d.source: [] for d in documents}
    roots = {d.source: d.root for d in documents}
    for chunk in chunks:
        by_source[chunk.source].append(chunk)
    hashes = {d.source: fingerprint(d.content_hash, salt) for d in documents}
    batches: list[Batch] = []
    current_sources: list[SourceRecord] = []
    current_chunks: list[Chunk] = []
    for source in sorted(by_source):
        own = by_source[source]
        if current_sources and len(current_chunks) + len(own) > batch_chunks:
            batches.append(Batch(current_sources, current_chunks))
            current_sources, current_chunks = [], []
        current_sources.append(
            SourceRecord(source, hashes[source], model_key, len(own), recipe, roots[source])
        )
        current_chunks.extend(own)
    if current_sources:
        batches.append(Batch(current_sources, current_chunks))
    return batches


def with_document_context(
    matrix: np.ndarray, sources: Sequence[str], weight: float = DOCUMENT_CONTEXT_WEIGHT
) -> np.ndarray:
    """Each row's direction plus ``weight`` times the mean direction of the rows of the same
    source, rescaled to the row's own length (see :data:`DOCUMENT_CONTEXT_WEIGHT`).

    Rows of one source only ever see that source: a batch holds whole sources, so the
    vectors do not depend on how sources were grouped into batches. A zero row stays zero
    (the store refuses it with its own error)."""
    matrix = np.asarray(matrix, dtype=np.float32)
    if weight == 0 or not len(matrix):
        return matrix
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    units = np.divide(matrix, norms, out=np.zeros_like(matrix), where=norms > 0)
    rows: dict[str, list[int]] = defaultdict(list)
    for i, source in enumerate(sources):
        rows[source].append(i)
    mixed = units.copy()
    for members in rows.values():
        mixed[members] += weight * units[members].mean(axis=0)
    lengths = np.linalg.norm(mixed, axis=1, keepdims=True)
    scale = np.divide(norms, lengths, out=np.zeros_like(norms), where=lengths > 0)
    return (mixed * scale).astype(np.float32)


def embed_batch(embedder: Embedder, batch: Batch,
                context_weight: float = DOCUMENT_CONTEXT_WEIGHT) -> list[EmbeddedChunk]:
    """Stored vectors for every chunk of the batch: passage embeddings carrying
    ``context_weight`` of their document's context (:func:`with_document_context`)."""
    if not batch.chunks:
        return []
    matrix = embedder.embed_passages([c.text_for_embedding for c in batch.chunks])
    matrix = with_document_context(matrix, [c.source for c in batch.chunks], context_weight)
    return [EmbeddedChunk(chunk, matrix[i]) for i, chunk in enumerate(batch.chunks)]


def write_batch(store: DocumentStore, batch: Batch, embedded: Sequence[EmbeddedChunk]) -> int:
    """Replace the batch's sources in one transaction; returns chunks written."""
    store.replace_sources(embedded, batch.sources)
    return len(embedded)


def record_sources(store: DocumentStore, records: Sequence[SourceRecord]) -> int:
    """Update the records of sources whose chunks stay as they are; returns records."""
    if records:
        store.add([], records)
    return len(records)


def delete_sources(store: DocumentStore, sources: Sequence[str]) -> int:
    """Remove sources that disappeared from their roots; returns chunks deleted."""
    return store.delete_sources(sources) if sources else 0


ProgressCallback = Callable[[str, int, int], None]

"""The sources the documentation indexes hold, and their removal.

``ragplate sources list`` and ``ragplate sources remove`` work on an index's sources for
every embedding model: a source indexed for the serving model and, during or after a
switch, for another one, is listed once (with its models) and removed from all of them.
On PostgreSQL the removal is one transaction (:mod:`ragplate.infra.stores.pg_sources`)
under the index lock, so it never interleaves with an ``index-docs`` run; the file drivers
remove store by store (each store write is atomic).

A removed source whose file is still under a configured root is indexed again by the next
``index-docs`` run: remove the file too (or the root) to keep it out.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ragplate.catalog.errors import InvalidInputError, ServiceError
from ragplate.catalog.profiles import PROFILES, EmbeddingProfile
from ragplate.infra import locks
from ragplate.infra.stores.pg_sources import SourceRow, remove_sources, source_rows

if TYPE_CHECKING:
    from ragplate.infra.runtime import Runtime

INDEXES: tuple[str, ...] = ("developer", "user")


@dataclass(frozen=True)
class Source:
    """One source of one index: its record for the serving model (or, when the serving
    model has none, the first model's), and every model holding it."""

    index: str
    label: str
    models: tuple[str, ...]
    serving: bool
    chunks: int
    content_hash: str
    indexed_at: datetime | None
    root: str | None

    def as_dict(self) -> dict[str, Any]:
        """The ``--json`` form."""
        return {"index": self.index, "label": self.label, "models": list(self.models),
                "serving": self.serving, "chunks": self.chunks,
                "content_hash": self.content_hash,
                "indexed_at": self.indexed_at.isoformat() if self.indexed_at else None,
                "root": self.root}


def check_indexes(indexes: Sequence[str]) -> tuple[str, ...]:
    """``indexes`` in order, each one of :data:`INDEXES`."""
    for name in indexes:
        if name not in INDEXES:
            raise InvalidInputError(f"--index {name!r}: expected developer or user")
    return tuple(dict.fromkeys(indexes))


def group_rows(rows: Iterable[SourceRow], serving: str) -> list[Source]:
    """One :class:`Source` per (index, label), ordered by index then label."""
    grouped: dict[tuple[str, str], list[SourceRow]] = {}
    for row in rows:
        grouped.setdefault((row.index, row.source), []).append(row)
    result = []
    for (index, label), found in sorted(grouped.items()):
        models = tuple(sorted(r.model_key for r in found))
        shown = next((r for r in found if r.model_key == serving), None)
        first = shown or min(found, key=lambda r: r.model_key)
        result.append(Source(index, label, models, shown is not None, first.chunk_count,
                             first.content_hash, first.indexed_at, first.root))
    return result


def _profiles(serving: EmbeddingProfile) -> list[EmbeddingProfile]:
    return [serving, *(p for p in PROFILES.values() if p.key != serving.key)]


def _store_rows(runtime: Runtime, indexes: Sequence[str], prefix: str | None,
                serving: EmbeddingProfile) -> list[SourceRow]:
    rows = []
    for index in indexes:
        for profile in _profiles(serving):
            for record in runtime.store(index, profile).sources().values():
                if not prefix or record.source.startswith(prefix):
                    rows.append(SourceRow(index, profile.key, record.source,
                                          record.chunk_count, record.content_hash, None,
                                          record.root))
    return rows


def list_sources(runtime: Runtime, *, indexes: Sequence[str],
                 prefix: str | None = None) -> list[Source]:
    """The sources of ``indexes`` whose label starts with ``prefix``."""
    chosen = check_indexes(indexes)
    serving = runtime.active_profile()
    if runtime.settings.vector_store == "pgvector":
        with runtime.engine.connect() as conn:
            rows = source_rows(conn, chosen, prefix)
    else:
        rows = _store_rows(runtime, chosen, prefix, serving)
    return group_rows(rows, serving.key)


@dataclass(frozen=True)
class Removal:
    """What :func:`remove_sources_everywhere` deleted, per (index, model)."""

    labels: tuple[str, ...]
    deleted: dict[tuple[str, str], tuple[int, int]]

    def as_dict(self) -> dict[str, Any]:
        """The ``--json`` form."""
        return {"labels": list(self.labels), "removed": [
            {"index": index, "model": model, "chunks": chunks, "sources": sources}
            for (index, model), (chunks, sources) in sorted(self.deleted.items())]}


def _missing(labels: Sequence[str], rows: Iterable[SourceRow]) -> list[str]:
    held = {row.source for row in rows}
    return [label for label in labels if label not in held]


def _refuse_missing(missing: Sequence[str], indexes: Sequence[str]) -> None:
    if missing:
        raise InvalidInputError(
            f"no source {', '.join(repr(m) for m in missing)} in the {' or '.join(indexes)} "
            "index (see `ragplate sources list`); nothing was removed")


def remove_sources_everywhere(runtime: Runtime, *, indexes: Sequence[str],
                              labels: Sequence[str]) -> Removal:
    """Delete ``labels`` from ``indexes`` for every model. Every label must be held by
    one of them, or nothing is removed."""
    chosen = check_indexes(indexes)
    wanted = tuple(dict.fromkeys(label.strip() for label in labels if label.strip()))
    if not wanted:
        raise InvalidInputError("name at least one source label to remove")
    engine = runtime.engine
    with locks.index_lock(engine) as acquired:
        if not acquired:
            raise ServiceError("an index-docs run is writing the indexes; nothing was "
                               "removed: run again when it has finished")
        if runtime.settings.vector_store == "pgvector":
            with engine.begin() as conn:
                rows = [r for r in source_rows(conn, chosen) if r.source in set(wanted)]
                _refuse_missing(_missing(wanted, rows), chosen)
                return Removal(wanted, remove_sources(conn, chosen, wanted,
                                                      models=sorted(PROFILES)))
        serving = runtime.active_profile()
        rows = [r for r in _store_rows(runtime, chosen, None, serving) if r.source in wanted]
        _refuse_missing(_missing(wanted, rows), chosen)
        deleted = {}
        for index in chosen:
            for profile in _profiles(serving):
                store = runtime.store(index, profile)
                held = [label for label in wanted if label in store.sources()]
                if held:
                    deleted[(index, profile.key)] = (store.delete_sources(held), len(held))
        return Removal(wanted, deleted)

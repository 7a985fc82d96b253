"""In-process store: brute-force numpy search over chunks held in memory (the shared
:class:`~ragplate.infra.stores.table.ChunkTable`)."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from typing import ClassVar

from ragplate.catalog.profiles import EmbeddingProfile
from ragplate.infra.stores.base import (
    EmbeddedChunk,
    SourceRecord,
    check_dimensions,
    check_sources_cover,
)
from ragplate.infra.stores.table import ChunkTable, TableReads


class MemoryStore(TableReads):
    """A :class:`DocumentStore` in process memory, for tests and one-off runs.

    State is shared process-wide per (index, model key): two instances built with the
    same index and profile see the same chunks, like two connections to one database.
    """

    _tables: ClassVar[dict[tuple[str, str], ChunkTable]] = {}
    _lock: ClassVar[threading.RLock] = threading.RLock()

    def __init__(self, index: str, profile: EmbeddingProfile) -> None:
        self.index = index
        self.profile = profile
        self._key = (index, profile.key)

    def _table(self) -> ChunkTable:
        return self._tables.get(self._key) or ChunkTable(self.profile.dimensions)

    def add(self, items: Sequence[EmbeddedChunk], sources: Sequence[SourceRecord]) -> None:
        """Append chunks and record their sources (no deletion)."""
        check_dimensions(self.profile, items)
        check_sources_cover(items, sources)
        with self._lock:
            self._tables[self._key] = self._table().written(items, sources)

    def replace_sources(
        self, items: Sequence[EmbeddedChunk], sources: Sequence[SourceRecord]
    ) -> None:
        """Delete every listed source, then insert ``items``: all or nothing."""
        check_dimensions(self.profile, items)
        check_sources_cover(items, sources)
        with self._lock:
            table = self._table()
            self._tables[self._key] = table.written(
                items, sources, drop=[s.source for s in sources]
            )

    def delete_sources(self, sources: Iterable[str]) -> int:
        """Delete the chunks and records of these sources; returns chunks deleted."""
        names = list(sources)
        with self._lock:
            table = self._table()
            deleted = table.chunk_count(names)
            self._tables[self._key] = table.written([], [], drop=names)
        return deleted


    def reset(self) -> None:
        """Remove every chunk and source record of this index and profile."""
        with self._lock:
            self._tables.pop(self._key, None)

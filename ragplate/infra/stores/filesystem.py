"""Single-file store: one ``.npz`` per (index, model) under a directory.

The file holds the float32 vector matrix and a JSON document (rows, source records)
stored as a byte array, so one ``os.replace`` publishes a complete new state.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import re
import tempfile
import threading
import zipfile
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from ragplate.catalog.errors import StoreError
from ragplate.catalog.profiles import EmbeddingProfile
from ragplate.infra.stores.base import (
    EmbeddedChunk,
    SourceRecord,
    check_dimensions,
    check_sources_cover,
)
from ragplate.infra.stores.table import ChunkTable, StoredChunk, TableReads

try:  # POSIX only: serialises writers of other processes on the directory.
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

FORMAT_VERSION = 1
_Stamp = tuple[int, int, int]


def store_filename(index: str, model_key: str) -> str:
    """``<index>--<model slug>-<hash>.npz``: readable, and distinct even when two keys
    slug to the same text (``local:a/b`` vs ``local:a-b``)."""
    digest = hashlib.sha1(f"{index}|{model_key}".encode()).hexdigest()[:8]

    def slug(text: str) -> str:
        return re.sub(r"[^A-Za-z0-9._]+", "-", text).strip("-.") or "x"

    return f"{slug(index)}--{slug(model_key)}-{digest}.npz"


class FilesystemStore(TableReads):
    """A :class:`DocumentStore` persisted to one file per index and embedding model.

    Writes are atomic (temp file in the same directory, fsync, ``os.replace``); readers
    re-read the file whenever its identity, mtime or size changed, so a second process
    sees what the first wrote. Meant for a single host, not for concurrent heavy writers.
    """

    _locks: ClassVar[dict[Path, threading.RLock]] = {}
    _locks_guard: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, index: str, profile: EmbeddingProfile, directory: Path) -> None:
        self.index = index
        self.profile = profile
        self.directory = Path(directory)
        self.path = self.directory / store_filename(index, profile.key)
        self._cached: ChunkTable | None = None
        self._stamp: _Stamp | None = None
        with self._locks_guard:
            self._lock = self._locks.setdefault(self.path, threading.RLock())

    # -- reading ---------------------------------------------------------------------

    def _current_stamp(self) -> _Stamp | None:
        try:
            st = self.path.stat()
        except FileNotFoundError:
            return None
        return (st.st_ino, st.st_mtime_ns, st.st_size)

    def _table(self) -> ChunkTable:
        stamp = self._current_stamp()
        if stamp is None:
            self._cached, self._stamp = None, None
            return ChunkTable(self.profile.dimensions)
        if self._cached is None or stamp != self._stamp:
            self._cached, self._stamp = self._read(), stamp
        return self._cached

    def _read(self) -> ChunkTable:
        try:
            with np.load(self.path, allow_pickle=False) as data:
                matrix = np.asarray(data["vectors"], dtype=np.float32)
                doc = json.loads(bytes(data["document"]).decode("utf-8"))
            rows = tuple(
                StoredChunk(r["source"], int(r["ordinal"]), r["text"], r["metadata"])
                for r in doc["rows"]
            )
            records = {
                r["source"]: SourceRecord(
                    r["source"], r["content_hash"], r["model_key"], int(r["chunk_count"]),
                    str(r.get("vector_recipe", "")), r.get("root"),
                )
                for r in doc["sources"]
            }
            version, model_key = doc["version"], doc["model_key"]
        except FileNotFoundError:
            return ChunkTable(self.profile.dimensions)
        except (
            OSError,
            EOFError,
            ValueError,
            KeyError,
            TypeError,
            AttributeError,
            zipfile.BadZipFile,
        ) as exc:
            raise StoreError(f"corrupt store file {self.path}: {exc}") from exc
        if version != FORMAT_VERSION or model_key != self.profile.key:
            raise StoreError(
                f"store file {self.path} is format {version} for {model_key!r}, "
                f"expected format {FORMAT_VERSION} for {self.profile.key!r}"
            )
        if matrix.shape != (len(rows), self.profile.dimensions):
            raise StoreError(
                f"corrupt store file {self.path}: vectors {matrix.shape} do not match "
                f"{len(rows)} rows of {self.profile.dimensions} dimensions"
            )
        return ChunkTable(self.profile.dimensions, rows, matrix, records)

    # -- writing ---------------------------------------------------------------------

    @contextlib.contextmanager
    def _writing(self) -> Iterator[ChunkTable]:
        """Hold the in-process and cross-process write locks around read-modify-write,
        so a writer never publishes a state built from a stale read."""
        with self._lock:
            self.directory.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.directory, os.O_RDONLY)
            try:
                if fcntl is not None:
                    fcntl.flock(fd, fcntl.LOCK_EX)
                yield self._table()
            finally:
                os.close(fd)  # closing releases the flock

    def _publish(self, table: ChunkTable) -> None:
        doc: dict[str, Any] = {
            "version": FORMAT_VERSION,
            "index": self.index,
            "model_key": self.profile.key,
            "dimensions": self.profile.dimensions,
            "rows": [
                {"source": r.source, "ordinal": r.ordinal, "text": r.text, "metadata": r.metadata}
                for r in table.rows
            ],
            "sources": [
                {
                    "source": s.source,
                    "content_hash": s.content_hash,
                    "model_key": s.model_key,
                    "chunk_count": s.chunk_count,
                    "vector_recipe": s.vector_recipe,
                    "root": s.root,
                }
                for s in table.records.values()
            ],
        }
        try:
            encoded = json.dumps(doc, ensure_ascii=False).encode("utf-8")
        except (TypeError, ValueError) as exc:
            raise StoreError(f"metadata cannot be stored in {self.path}: {exc}") from exc
        buffer = io.BytesIO()
        np.savez(
            buffer,
            vectors=table.matrix.astype(np.float32, copy=False),
            document=np.frombuffer(encoded, dtype=np.uint8),
        )
        fd, tmp = tempfile.mkstemp(dir=self.directory, prefix=f".{self.path.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(buffer.getbuffer())
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            raise
        self._fsync_directory()
        self._cached, self._stamp = table, self._current_stamp()

    def _fsync_directory(self) -> None:
        # Makes the rename itself durable; not supported everywhere, hence best effort.
        with contextlib.suppress(OSError):
            fd = os.open(self.directory, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)

    # -- DocumentStore ---------------------------------------------------------------

    def add(self, items: Sequence[EmbeddedChunk], sources: Sequence[SourceRecord]) -> None:
        """Append chunks and record their sources (no deletion)."""
        check_dimensions(self.profile, items)
        check_sources_cover(items, sources)
        with self._writing() as table:
            self._publish(table.written(items, sources))

    def replace_sources(
        self, items: Sequence[EmbeddedChunk], sources: Sequence[SourceRecord]
    ) -> None:
        """Delete every listed source, then insert ``items``: all or nothing."""
        check_dimensions(self.profile, items)
        check_sources_cover(items, sources)
        with self._writing() as table:
            self._publish(table.written(items, sources, drop=[s.source for s in sources]))

    def delete_sources(self, sources: Iterable[str]) -> int:
        """Delete the chunks and records of these sources; returns chunks deleted."""
        names = list(sources)
        with self._writing() as table:
            deleted = table.chunk_count(names)
            if deleted or any(n in table.records for n in names):
                self._publish(table.written([], [], drop=names))
        return deleted


    def reset(self) -> None:
        """Delete this index's file (other indexes and models keep theirs)."""
        with self._writing():
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()
            self._cached, self._stamp = None, None

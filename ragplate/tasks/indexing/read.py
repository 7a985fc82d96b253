"""Read documentation roots into :class:`Document`s, validating every source first."""

from __future__ import annotations

import fnmatch
import hashlib
import logging
import os
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

from ragplate.catalog.documents import (
    DEFAULT_MAX_SOURCE_BYTES,
    AudiencePolicy,
    Document,
    apply_developer_defaults,
    validate_audience,
)
from ragplate.catalog.errors import SourceError, SourcesError
from ragplate.tasks.indexing.front_matter import split_front_matter

log = logging.getLogger(__name__)

NUL = "\x00"
BOM = "\ufeff"


def source_label(prefix: str, root: Path, path: Path) -> str:
    """``prefix/relative/path.md``, or just the relative path when the prefix is empty."""
    relative = path.relative_to(root).as_posix()
    return f"{prefix}/{relative}" if prefix else relative


def read_document(prefix: str, root: Path, path: Path, *,
                  max_bytes: int = DEFAULT_MAX_SOURCE_BYTES) -> Document:
    """One Markdown file as a Document; raises :class:`SourceError` naming the file.

    Refused: a file name that is not UTF-8, a file larger than ``max_bytes``, one that
    cannot be read, is not UTF-8 or holds a NUL character (PostgreSQL text cannot hold
    one). A UTF-8 byte order mark is dropped, so front matter after it is read; the content
    hash is the SHA-256 of the bytes after it."""
    label = source_label(prefix, root, path)
    try:
        label.encode("utf-8")
    except UnicodeEncodeError:
        # Python keeps undecodable bytes of a file name as lone surrogates; the label could
        # be neither stored, embedded nor printed, so the file is refused by its bytes.
        shown = os.fsencode(label).decode("utf-8", "backslashreplace")
        raise SourceError(shown, "file name is not valid UTF-8; rename the file") from None
    try:
        size = path.stat().st_size
        if size > max_bytes:
            raise SourceError(label, f"is {size} bytes, above the cap of {max_bytes} "
                              "(RAGPLATE_DOCS_MAX_FILE_BYTES)")
        data = path.read_bytes()
        raw = data.decode("utf-8")
    except OSError as exc:
        raise SourceError(label, f"cannot be read ({exc.strerror})") from exc
    except UnicodeDecodeError as exc:
        raise SourceError(label, f"is not UTF-8 (byte {exc.start})") from exc
    if len(data) > max_bytes:  # the file grew between stat and read
        raise SourceError(label, f"is above the cap of {max_bytes} bytes "
                          "(RAGPLATE_DOCS_MAX_FILE_BYTES)")
    if raw.startswith(BOM):
        raw, data = raw[len(BOM):], data[len(BOM.encode()):]
    if NUL in raw:
        raise SourceError(label, f"holds a NUL character (U+0000) at character "
                          f"{raw.index(NUL)}, which PostgreSQL text cannot store")
    metadata, text = split_front_matter(label, raw)
    if _holds_nul(metadata):  # a YAML "\0" escape
        raise SourceError(label, "front matter holds a NUL character (U+0000), which "
                          "PostgreSQL text cannot store")
    validate_audience(label, metadata)
    metadata.setdefault("heading_breadcrumb", [])
    return Document(
        source=label,
        text=text,
        metadata=metadata,
        content_hash=hashlib.sha256(data).hexdigest(),
        root=prefix,
    )


def _holds_nul(value: object) -> bool:
    if isinstance(value, str):
        return NUL in value
    if isinstance(value, dict):
        return any(_holds_nul(k) or _holds_nul(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_holds_nul(v) for v in value)
    return False


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def source_paths(root: Path) -> list[Path]:
    """Every ``*.md`` file under ``root`` (already resolved), in sorted order, following
    links, to files or directories alike, whose target stays inside ``root``. A link whose
    target resolves outside it is skipped with a warning naming it: a link must not publish
    a file the root does not hold. A directory reached twice (a link to an ancestor, two
    links to one directory) is walked once, by its own path when the root holds one."""
    found: list[Path] = []
    walked: set[Path] = set()
    # Real directories first: a linked one is walked only if no real path reached it.
    pending: list[Path] = [root]
    linked: list[Path] = []
    while pending or linked:
        directory = pending.pop() if pending else linked.pop(0)
        real = directory.resolve()
        if real in walked:
            continue
        walked.add(real)
        try:
            with os.scandir(directory) as entries:
                children = sorted(entries, key=lambda e: e.name)
        except OSError as exc:
            log.warning("%s: cannot be listed (%s); its files are not indexed", directory,
                        exc.strerror or exc)
            continue
        for entry in children:
            path = Path(entry.path)
            link = entry.is_symlink()
            if link:
                target = path.resolve()
                if not _inside(target, root):
                    log.warning("%s: a link to %s, outside the documentation root %s; "
                                "not indexed", path, target, root)
                    continue
            if entry.is_dir():
                (linked if link else pending).append(path)
            elif entry.is_file() and fnmatch.fnmatchcase(entry.name, "*.md"):
                found.append(path)
            elif entry.is_file() and entry.name.lower().endswith(".md"):
                # Labels keep the file's name, so only ".md" is read; a "GUIDE.MD" left out
                # without a word would look indexed to whoever wrote it.
                log.warning("%s: not indexed: only files ending in .md (lower case) are; "
                            "rename it to index it", path)
    return sorted(found)


def read_root(prefix: str, root: Path, *,
              max_bytes: int = DEFAULT_MAX_SOURCE_BYTES) -> list[Document]:
    """Every ``*.md`` under ``root`` (recursively, see :func:`source_paths`), in label
    order; every file is read before a refusal is raised, so that one run names them all
    (:class:`SourcesError`, or the one :class:`SourceError`)."""
    if not root.is_dir():
        raise SourceError(str(root), "documentation root is not a directory")
    root = root.resolve()
    documents, errors = [], []
    for path in source_paths(root):
        try:
            documents.append(read_document(prefix, root, path, max_bytes=max_bytes))
        except SourceError as exc:
            errors.append(exc)
    _raise(errors)
    return documents


def _raise(errors: list[SourceError]) -> None:
    if len(errors) == 1:
        raise errors[0]
    if errors:
        raise SourcesError(errors)


def read_sources(roots: Mapping[str, Path], *,
                 max_bytes: int = DEFAULT_MAX_SOURCE_BYTES) -> list[Document]:
    """Read and validate every source of every root before anything is written.

    Any invalid source (unknown audience, unreadable file) raises here, so an indexing
    run stops with the store exactly as it was; every invalid source of every root is
    named, one line each.
    """
    for root in roots.values():
        if not Path(root).is_dir():
            raise SourceError(str(root), "documentation root is not a directory")
    documents: list[Document] = []
    errors: list[SourceError] = []
    seen: dict[str, Path] = {}
    for prefix, root in roots.items():
        try:
            read = read_root(prefix, Path(root), max_bytes=max_bytes)
        except SourcesError as exc:
            errors += exc.errors
            continue
        except SourceError as exc:
            errors.append(exc)
            continue
        for document in read:
            if document.source in seen:
                errors.append(SourceError(document.source,
                                          f"label is produced by two roots ({root})"))
                continue
            seen[document.source] = Path(root)
            documents.append(document)
    _raise(errors)
    return sorted(documents, key=lambda d: d.source)


def developer_corpus(documents: list[Document]) -> list[Document]:
    """Every document, with the developer defaults filled in."""
    return [
        replace(d, metadata=apply_developer_defaults(d.source, d.metadata))
        for d in documents
    ]


def user_corpus(documents: list[Document], policy: AudiencePolicy) -> list[Document]:
    """Only documents the audience policy admits on their declared metadata."""
    admitted = []
    for document in documents:
        reason = policy.refusal(document.metadata)
        if reason is None:
            admitted.append(document)
        else:
            log.debug("%s: not in the user corpus (%s)", document.source, reason)
    return admitted


def corpus_for(index_name: str, documents: list[Document],
               policy: AudiencePolicy) -> list[Document]:
    """The developer corpus (with defaults) or the user corpus (policy-admitted)."""
    if index_name == "developer":
        return developer_corpus(documents)
    return user_corpus(documents, policy)

"""Read documentation roots into :class:`Document`s, validating every source first."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import yaml

from ragplate.catalog.documents import (
    AudiencePolicy,
    Document,
    apply_developer_defaults,
    validate_audience,
)
from ragplate.catalog.errors import SourceError

log = logging.getLogger(__name__)

_FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)(?:\r?\n)?^---[ \t]*(?:\r?\n|\Z)", re.S | re.M)


def source_label(prefix: str, root: Path, path: Path) -> str:
    """``prefix/relative/path.md``, or just the relative path when the prefix is empty."""
    relative = path.relative_to(root).as_posix()
    return f"{prefix}/{relative}" if prefix else relative


def split_front_matter(label: str, raw: str) -> tuple[dict[str, Any], str]:
    """Metadata from the YAML front matter and the text without it.

    Invalid YAML (or front matter that is not a mapping) yields no metadata and a
    warning naming the file; the block is still removed from the indexed text.
    """
    match = _FRONT_MATTER.match(raw)
    if not match:
        return {}, raw
    body = raw[match.end() :]
    try:
        loaded = yaml.safe_load(match.group(1))
    except yaml.YAMLError as exc:
        log.warning("%s: invalid YAML front matter, indexed without metadata (%s)", label,
                    str(exc).splitlines()[0])
        return {}, body
    if loaded is None:
        return {}, body
    if not isinstance(loaded, dict):
        log.warning("%s: front matter is not a mapping, indexed without metadata", label)
        return {}, body
    # Dates and other YAML types become strings so metadata is plain JSON everywhere.
    metadata: dict[str, Any] = json.loads(json.dumps(loaded, default=str))
    return metadata, body


def read_document(prefix: str, root: Path, path: Path) -> Document:
    """One Markdown file as a Document; raises :class:`SourceError` naming the file."""
    label = source_label(prefix, root, path)
    try:
        label.encode("utf-8")
    except UnicodeEncodeError:
        # Python keeps undecodable bytes of a file name as lone surrogates; the label could
        # be neither stored, embedded nor printed, so the file is refused by its bytes.
        shown = os.fsencode(label).decode("utf-8", "backslashreplace")
        raise SourceError(shown, "file name is not valid UTF-8; rename the file") from None
    try:
        data = path.read_bytes()
        raw = data.decode("utf-8")
    except OSError as exc:
        raise SourceError(label, f"cannot be read ({exc.strerror})") from exc
    except UnicodeDecodeError as exc:
        raise SourceError(label, f"is not UTF-8 (byte {exc.start})") from exc
    metadata, text = split_front_matter(label, raw)
    validate_audience(label, metadata)
    metadata.setdefault("heading_breadcrumb", [])
    return Document(
        source=label,
        text=text,
        metadata=metadata,
        content_hash=hashlib.sha256(data).hexdigest(),
        root=prefix,
    )


def read_root(prefix: str, root: Path) -> list[Document]:
    """Every ``*.md`` under ``root`` (recursively), in label order."""
    if not root.is_dir():
        raise SourceError(str(root), "documentation root is not a directory")
    root = root.resolve()
    paths = sorted(p for p in root.rglob("*.md") if p.is_file())
    return [read_document(prefix, root, path) for path in paths]


def read_sources(roots: Mapping[str, Path]) -> list[Document]:
    """Read and validate every source of every root before anything is written.

    Any invalid source (unknown audience, unreadable file) raises here, so an indexing
    run stops with the store exactly as it was.
    """
    documents: list[Document] = []
    seen: dict[str, Path] = {}
    for prefix, root in roots.items():
        for document in read_root(prefix, Path(root)):
            if document.source in seen:
                raise SourceError(document.source, f"label is produced by two roots ({root})")
            seen[document.source] = Path(root)
            documents.append(document)
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

"""The YAML front matter of a Markdown file, parsed without giving its author any power
over the indexer: no aliases (an alias bomb of a few hundred bytes expands to gigabytes),
and caps on the block's size, its nesting depth and its number of nodes. A front matter
over a cap is treated as invalid YAML: a warning naming the file, no metadata."""

from __future__ import annotations

import json
import logging
import re
from typing import Any

import yaml

log = logging.getLogger(__name__)

#: The largest front matter read, in bytes of UTF-8.
MAX_BYTES = 65_536
#: The deepest nesting of mappings and lists.
MAX_DEPTH = 32
#: The most scalars, mappings and lists in one front matter.
MAX_NODES = 10_000

_FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)(?:\r?\n)?^---[ \t]*(?:\r?\n|\Z)", re.S | re.M)


class FrontMatterRefused(yaml.YAMLError):
    """The front matter uses an alias or exceeds a cap."""


class _BoundedLoader(yaml.SafeLoader):
    """PyYAML's safe loader, refusing aliases and counting depth and nodes as it composes
    (the composer recurses: the depth cap also keeps it clear of Python's stack limit)."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0
        self._nodes = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            raise FrontMatterRefused("aliases are not allowed")
        self._nodes += 1
        if self._nodes > MAX_NODES:
            raise FrontMatterRefused(f"more than {MAX_NODES} nodes")
        self._depth += 1
        if self._depth > MAX_DEPTH:
            raise FrontMatterRefused(f"nested deeper than {MAX_DEPTH} levels")
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def load(text: str) -> Any:
    """The YAML document ``text`` as Python data; raises :class:`yaml.YAMLError` for
    invalid YAML, an alias or a cap exceeded."""
    if len(text.encode("utf-8", "surrogatepass")) > MAX_BYTES:
        raise FrontMatterRefused(f"larger than {MAX_BYTES} bytes")
    loader = _BoundedLoader(text)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


def split_front_matter(label: str, raw: str) -> tuple[dict[str, Any], str]:
    """Metadata from the YAML front matter and the text without it.

    Invalid YAML (or front matter that is not a mapping, uses an alias or exceeds a cap)
    yields no metadata and a warning naming the file; the block is still removed from the
    indexed text.
    """
    match = _FRONT_MATTER.match(raw)
    if not match:
        return {}, raw
    body = raw[match.end() :]
    try:
        loaded = load(match.group(1))
    except yaml.YAMLError as exc:
        log.warning("%s: invalid YAML front matter, indexed without metadata (%s)", label,
                    str(exc).splitlines()[0])
        return {}, body
    except RecursionError:  # a cap holds first; this keeps a traceback out all the same
        log.warning("%s: invalid YAML front matter, indexed without metadata (nested too "
                    "deeply)", label)
        return {}, body
    if loaded is None:
        return {}, body
    if not isinstance(loaded, dict):
        log.warning("%s: front matter is not a mapping, indexed without metadata", label)
        return {}, body
    # Dates and other YAML types become strings so metadata is plain JSON everywhere.
    metadata: dict[str, Any] = json.loads(json.dumps(loaded, default=str))
    return metadata, body

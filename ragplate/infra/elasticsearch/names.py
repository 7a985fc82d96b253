"""Index and alias names: one index per (role, model), behind one alias per role.

A model's index is ``{app}_<role>_<12 hex of sha1(model key)>``, its role's alias
``{app}_<role>`` (``ragplate_docs_developer``, ``ragplate_records_cms_contents``). The
switch builds the target's indexes beside the serving ones and moves the aliases in one
``_aliases`` call.
"""

from __future__ import annotations

import hashlib
import re

_INVALID = re.compile(r"[^a-z0-9_.-]")


def _part(name: str) -> str:
    """``name`` as a lower-case index-name part; a name that had to change gets a hash of
    the original, so two names never meet."""
    clean = _INVALID.sub("-", name.lower()).strip("-_.") or "x"
    if clean != name:
        clean += "-" + hashlib.sha1(name.encode()).hexdigest()[:6]
    return clean[:120]


def model_hash(model_key: str) -> str:
    """12 hex characters naming a model in index names."""
    return hashlib.sha1(model_key.encode()).hexdigest()[:12]


def docs_alias(prefix: str, index: str) -> str:
    """The alias of a documentation index (``developer``, ``user``)."""
    return f"{prefix}_docs_{_part(index)}"


def docs_index(prefix: str, index: str, model_key: str) -> str:
    """The Elasticsearch index of one documentation index and model."""
    return f"{docs_alias(prefix, index)}_{model_hash(model_key)}"


def records_alias(prefix: str, entity: str) -> str:
    """The alias of an entity's application-search index (``cms.contents``)."""
    return f"{prefix}_records_{_part(entity.replace('.', '_'))}"


def records_index(prefix: str, entity: str, model_key: str) -> str:
    """The application-search index of one entity and model."""
    return f"{records_alias(prefix, entity)}_{model_hash(model_key)}"

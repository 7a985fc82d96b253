"""``ragplate index create``: the documentation indexes of the serving profile, made
empty and ready (what ``ai:create-rag-index`` does).

On Elasticsearch each index is created with the mapping ragplate writes (the profile's
dimensions and similarity, a keyword field per filter) and its role's alias pointed at it;
``force`` drops it first. On PostgreSQL the tables come from the migrations, so there is
nothing to create, and ``force`` empties the serving model's rows of the index.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ragplate.infra.runtime import Runtime


def create_indexes(runtime: Runtime, indexes: Sequence[str], *, force: bool
                   ) -> list[dict[str, Any]]:
    """Create (``force``: recreate) each documentation index of the serving profile; one
    row per index: ``index``, ``profile``, ``store``, ``name``, ``alias``, ``outcome``."""
    profile = runtime.active_profile()
    driver = runtime.settings.vector_store
    rows = []
    for index in indexes:
        store = runtime.store(index, profile)
        create = getattr(store, "create", None)
        if create is not None:
            outcome = str(create(force=force))
        elif force:
            store.reset()
            outcome = "emptied"
        else:
            outcome = "exists"
        rows.append({"index": index, "profile": profile.key, "store": driver,
                     "name": getattr(store, "name", index), "alias": getattr(store, "alias", None),
                     "outcome": outcome})
    return rows

"""Whether an indexing run would change nothing, decided without Prefect.

A run from the command line over an index that is already up to date would spend most of
its time importing Prefect and setting up a flow run, to skip every source. The same
plain functions the flow's tasks wrap decide it here first; only a run with nothing to
embed, delete, record or report is answered this way, and any doubt (an invalid source,
an emptied root, the index lock held, a search index not built yet, any error) leaves
the decision to the flow, which reports it where operators look."""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

from ragplate.infra import locks
from ragplate.tasks.indexing import index, read
from ragplate.tasks.indexing.split import make_splitter
from ragplate.tasks.indexing.targets import indexes_for, resolve_roots

if TYPE_CHECKING:
    from ragplate.infra.runtime import Runtime

logger = logging.getLogger(__name__)


def up_to_date_rows(runtime: Runtime, *, profile: str, path: str | None,
                    prefix: str | None, full: bool) -> list[dict[str, Any]] | None:
    """The summary rows of a run that would change nothing (as the flow would return
    them), or ``None`` when the flow has work to do or something to say."""
    if full:
        return None
    try:
        with locks.index_lock(runtime.engine) as acquired:
            if not acquired:
                return None  # the flow says another run holds it
            return _rows(runtime, profile, path, prefix)
    except Exception as exc:
        logger.debug("up-to-date check left to the flow: %s", type(exc).__name__)
        return None


def _rows(runtime: Runtime, profile: str, path: str | None,
          prefix: str | None) -> list[dict[str, Any]] | None:
    settings = runtime.settings
    targets = indexes_for(profile)
    roots = resolve_roots(settings, path, prefix)
    others = [p for p in settings.all_roots() if p not in roots]
    documents = read.read_sources(roots, max_bytes=settings.docs_max_file_bytes)
    if index.emptied_roots(documents, list(roots)):
        return None  # the flow warns about it, or refuses
    model = runtime.active_profile()
    weight = settings.docs_context_weight
    salt = index.index_salt(make_splitter(settings), weight)
    recipe = index.vector_recipe(weight)
    rows = []
    for name in targets:
        started = time.perf_counter()
        store = runtime.store(name, model)
        has_search_index = getattr(store, "has_search_index", None)
        if has_search_index is not None and not has_search_index():
            return None  # a first load was interrupted before its search index was built
        corpus = read.corpus_for(name, documents, runtime.policy)
        plan = index.plan_index(name, corpus, store.sources(), model.key, full=False,
                                prefixes=list(roots), other_prefixes=others, salt=salt,
                                recipe=recipe)
        if plan.changed or plan.deleted or plan.unrecorded:
            return None
        summary = index.IndexSummary(name, sources_read=len(corpus),
                                     unchanged=len(plan.unchanged))
        summary.seconds = time.perf_counter() - started
        rows.append(summary.as_row())
    return rows

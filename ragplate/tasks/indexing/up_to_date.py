"""Whether an indexing run would change nothing, decided without Prefect.

A run from the command line over an index that is already up to date would spend most of
its time importing Prefect and setting up a flow run, to skip every source. The same
plain functions the flow's tasks wrap decide it here first; only a run with nothing to
embed, delete, record or report is answered this way, and any doubt (an invalid source,
a root without Markdown files whose sources are indexed, a search index not built yet,
any error) leaves the decision to the flow, which reports it where operators look.

The check holds the index lock, as a run does: when another run holds it, the command is
refused here, before any flow run (whatever its options: that flow run could only fail).
Holding it, an up-to-date answer also marks the flow runs a killed process left
``RUNNING`` as ``CRASHED``, as the flow's first step does, when the Prefect API answers.
The warnings of reading the sources are held back and shown only with an up-to-date
answer: a flow run that follows reads them again and shows them itself.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from ragplate.catalog.errors import ServiceError
from ragplate.infra import flow_runs, locks
from ragplate.infra.stores.base import stale_word_counts
from ragplate.tasks.indexing import index, read
from ragplate.tasks.indexing.split import make_splitter
from ragplate.tasks.indexing.targets import indexes_for, resolve_roots

if TYPE_CHECKING:
    from pathlib import Path

    from ragplate.infra.runtime import Runtime

logger = logging.getLogger(__name__)

#: The flow whose work the check answers for.
FLOW_NAME = "index-rag-docs"
#: The refusal of a run while another holds the index lock (here and in the flow).
BUSY = ("another index-docs run is indexing this database; nothing was changed: run again "
        "when it has finished")
#: The loggers of reading sources, whose warnings wait for the answer.
READING = "ragplate.tasks.indexing"


def up_to_date_rows(runtime: Runtime, *, profile: str, path: str | None,
                    prefix: str | None, full: bool,
                    always_run: bool = False) -> list[dict[str, Any]] | None:
    """The summary rows of a run that would change nothing (as the flow would return
    them), or ``None`` when the flow has work to do or something to say (always with
    ``full`` or ``always_run``). Raises :class:`ServiceError` when another run holds the
    index lock."""
    with locks.index_lock(runtime.engine) as acquired:
        if not acquired:
            raise ServiceError(BUSY)
        if full or always_run:
            return None
        try:
            with _held_warnings() as held:
                rows = _rows(runtime, profile, path, prefix)
        except Exception as exc:
            logger.debug("up-to-date check left to the flow: %s", type(exc).__name__)
            return None
        if rows is not None:
            for record in held:
                logging.getLogger(record.name).handle(record)
            flow_runs.crash_orphans_if_server_up(runtime.settings, FLOW_NAME)
        return rows


def refuse_emptied_roots(runtime: Runtime, *, profile: str, path: str | None,
                         prefix: str | None) -> None:
    """The flow's refusal of a root without Markdown files whose sources an index holds
    (:func:`ragplate.tasks.indexing.steps.check_emptied_roots`), made before a flow run
    starts, so that none is left failed in the Prefect UI. A root that is no directory is
    the flow's to name. (Not for ``--allow-empty``, which lets the flow delete them.)"""
    settings = runtime.settings
    roots = resolve_roots(settings, path, prefix)
    with _held_warnings():  # what listing a root warns of, the flow says
        empty = [p for p, root in roots.items()
                 if root.is_dir() and not read.source_paths(root.resolve())]
    if not empty:
        return
    others = [p for p in settings.all_roots() if p not in roots]
    model = runtime.active_profile()
    deletions = {}
    for name in indexes_for(profile):
        # An emptied root reads no document: all its indexed sources would go.
        found = index.root_sources(runtime.store(name, model).sources(), empty,
                                   prefixes=list(roots), other_prefixes=others)
        if found:
            deletions[name] = found
    index.refuse_emptied_roots(deletions, roots)


@contextmanager
def _held_warnings() -> Iterator[list[logging.LogRecord]]:
    """The records the loggers of reading sources emit in the block, held back from the
    handlers (this process's console) until the caller decides."""
    held: list[logging.LogRecord] = []

    class _Hold(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            held.append(record)

    reading = logging.getLogger(READING)
    hold, propagate = _Hold(logging.WARNING), reading.propagate
    reading.addHandler(hold)
    reading.propagate = False
    try:
        yield held
    finally:
        reading.removeHandler(hold)
        reading.propagate = propagate


def _rows(runtime: Runtime, profile: str, path: str | None,
          prefix: str | None) -> list[dict[str, Any]] | None:
    settings = runtime.settings
    targets = indexes_for(profile)
    roots = resolve_roots(settings, path, prefix)
    others = [p for p in settings.all_roots() if p not in roots]
    documents = read.read_sources(roots, max_bytes=settings.docs_max_file_bytes)
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
        if stale_word_counts(store):
            return None  # chunks whose words another release counted: the flow recounts
        corpus = read.corpus_for(name, documents, runtime.policy)
        # A root without Markdown files whose sources are indexed would delete them: the
        # flow refuses it (or deletes with --allow-empty). Without any, it changes nothing.
        plan = index.plan_index(name, corpus, store.sources(), model.key, full=False,
                                prefixes=list(roots), other_prefixes=others, salt=salt,
                                recipe=recipe)
        if plan.changed or plan.deleted or plan.unrecorded:
            return None
        summary = index.IndexSummary(name, sources_read=len(corpus),
                                     unchanged=len(plan.unchanged))
        summary.seconds = time.perf_counter() - started
        rows.append(summary.as_row())
    _warn_emptied(roots, index.emptied_roots(documents, list(roots)))
    return rows


def _warn_emptied(roots: dict[str, Path], emptied: list[str]) -> None:
    """The flow's warning of a root without Markdown files (see
    :func:`ragplate.tasks.indexing.steps.check_emptied_roots`)."""
    for prefix in emptied:
        logger.warning(
            "documentation root %s (prefix %r) holds no Markdown file", roots[prefix], prefix)

"""The switch's check of the documentation it is about to rebuild.

The switch rebuilds the documentation indexes from the configured roots only
(``RAGPLATE_DOCS_ROOTS`` and ``RAGPLATE_DOCS_PATH``). Whatever the serving indexes hold
beyond them would be dropped at the activation, so a start is refused while they hold:

- a source that cannot be read or is invalid (the sources are read first, as indexing
  does, so a switch stops with the indexes whole);
- sources indexed under a prefix no configured root has (an earlier ``index-docs --path``);
- sources of a configured root that holds no Markdown file (usually a missing mount).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

from ragplate.catalog.documents import Document
from ragplate.catalog.errors import SourceError, SourcesError
from ragplate.infra.runtime import Runtime
from ragplate.infra.stores.base import SourceRecord
from ragplate.tasks.indexing.index import emptied_roots, in_scope, root_sources


def foreign_sources(stored: Mapping[str, SourceRecord], prefixes: Sequence[str]) -> Counter[str]:
    """Per recorded root prefix (``?`` when none was recorded), the stored sources that
    belong to none of the configured roots ``prefixes``."""
    return Counter(
        "?" if record.root is None else record.root
        for source, record in stored.items()
        if not in_scope(source, prefixes, (), record.root)
    )


def emptied_counts(stored: Mapping[str, SourceRecord], documents: Sequence[Document],
                   prefixes: Sequence[str]) -> Counter[str]:
    """Per configured root that read no Markdown file, how many stored sources it holds."""
    own = root_sources(stored, emptied_roots(documents, prefixes), prefixes=prefixes)
    return Counter({prefix: len(sources) for prefix, sources in own.items()})


def refusal(stored: Mapping[str, Mapping[str, SourceRecord]], documents: Sequence[Document],
            prefixes: Sequence[str]) -> str | None:
    """Why the documentation ``stored`` per index (of the serving model) cannot be rebuilt
    from the configured roots without losing sources; ``None`` when it can."""
    problems = []
    for index, records in stored.items():
        foreign = foreign_sources(records, prefixes)
        if foreign:
            listed = ", ".join(f"{prefix!r}: {n}" for prefix, n in sorted(foreign.items()))
            problems.append(
                f"the {index} index holds sources of roots that are not configured "
                f"({listed}); the switch rebuilds only the configured roots and would drop "
                "them: add their directories to RAGPLATE_DOCS_ROOTS, or remove them with "
                "`ragplate index-docs --path EMPTY_DIR --prefix P --allow-empty`")
        for prefix, n in sorted(emptied_counts(records, documents, prefixes).items()):
            problems.append(
                f"the configured root {prefix!r} holds no Markdown file, but the {index} "
                f"index holds {n} of its sources (a missing checkout or mount?)")
    return "; ".join(problems) if problems else None


def configured_sources(runtime: Runtime) -> list[Document]:
    """Every source of every configured root, read and validated (what the switch
    rebuilds the documentation indexes from)."""
    from ragplate.tasks.indexing.read import read_sources

    return read_sources(runtime.settings.all_roots(),
                        max_bytes=runtime.settings.docs_max_file_bytes)


def documentation_refusal(runtime: Runtime, indexes: Sequence[str]) -> str | None:
    """:func:`refusal` for the serving model's ``indexes``, after reading every configured
    source (an unreadable or invalid one refuses too)."""
    if not indexes:
        return None
    roots = runtime.settings.all_roots()
    try:
        documents = configured_sources(runtime)
    except (SourceError, SourcesError) as exc:
        return f"documentation cannot be read: {exc}"
    serving = runtime.active_profile()
    stored = {index: runtime.store(index, serving).sources() for index in indexes}
    return refusal(stored, documents, list(roots))

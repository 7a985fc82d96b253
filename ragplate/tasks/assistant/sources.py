"""Where respond() finds its documentation: the indexes, or a fixture.

:class:`DocumentationSources` is what the answer path needs of documentation — the modules
an index holds (for the scope), the evidence for a question under an access context, and
more passages of the best sources for the extractive answerer. :class:`IndexSources` reads
the configured store of the serving profile (production); the Level-1 assistant evaluation
passes a fixture (:mod:`ragplate.tasks.evaluation.assistant_fixtures`) so its runs do not
depend on what an operator indexed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from ragplate.catalog.assistant import Policy
from ragplate.catalog.documents import AccessContext
from ragplate.infra.models.base import Embedder
from ragplate.infra.stores.base import TermStatistics
from ragplate.infra.stores.pg_sources import indexed_modules, sources_generation
from ragplate.tasks.assistant.coverage import Frequencies
from ragplate.tasks.assistant.evidence import source_passages
from ragplate.tasks.retrieval.documentation import (
    Hit,
    retrieve_developer,
    retrieve_user,
    user_filters,
)

if TYPE_CHECKING:
    from ragplate.infra.runtime import Runtime


class DocumentationSources(Protocol):
    """The documentation one message is answered from."""

    #: The question's embedder: the guardrails' intent model reads its vector, and a
    #: retrieval with the same model reuses it.
    embedder: Embedder

    def modules(self, index: str) -> set[str] | None:
        """The modules ``index`` holds, or ``None`` when they cannot be listed."""
        ...

    def retrieve(self, policy: Policy, access: AccessContext | None, question: str
                 ) -> list[Hit]:
        """The evidence: the policy's index, under ``access`` on the user index."""
        ...

    def passages(self, policy: Policy, access: AccessContext | None, question: str,
                 hits: list[Hit]) -> dict[int, list[str]]:
        """More chunks of the best hits' sources, under the same filters."""
        ...

    def frequencies(self, policy: Policy) -> Frequencies | None:
        """How common words are in the policy's index (see
        :func:`~ragplate.tasks.assistant.coverage.question_coverage`), or ``None``: every
        word weighs alike."""
        ...


_modules: dict[tuple[str, str], tuple[Any, set[str]]] = {}


class IndexSources:
    """The configured store of the serving profile (what ``ragplate retrieve`` reads)."""

    def __init__(self, runtime: Runtime, embedder: Embedder) -> None:
        self.runtime = runtime
        self.embedder = embedder

    def modules(self, index: str) -> set[str] | None:
        """The modules of the index, read again only when its sources changed (the newest
        indexing time and the count of sources: one small query per message instead of a
        scan of every chunk); ``None`` for a store that does not list them (the scope then
        stays generic). Elasticsearch answers from its keyword field in one aggregation."""
        if self.runtime.settings.vector_store != "pgvector":
            store = self.runtime.store(index, self.embedder.profile)
            listed = getattr(store, "modules", None)
            return None if listed is None else set(listed())
        key = (index, self.embedder.profile.key)
        with self.runtime.engine.connect() as conn:
            generation = sources_generation(conn, *key)
            cached = _modules.get(key)
            if cached is None or cached[0] != generation:
                cached = (generation, indexed_modules(conn, *key))
                _modules[key] = cached
        return cached[1]

    def retrieve(self, policy: Policy, access: AccessContext | None, question: str
                 ) -> list[Hit]:
        """Retrieval with the configured strategy, the policy's floor and depth."""
        store = self.runtime.store(policy.profile.index, self.embedder.profile)
        settings = self.runtime.settings
        if policy.profile.index == "user":
            return retrieve_user(question, store=store, embedder=self.embedder,
                                 access=_person(access),
                                 policy=self.runtime.policy, top_k=policy.max_documents,
                                 min_score=policy.min_similarity,
                                 strategy=settings.docs_retrieval, rrf_k=settings.docs_rrf_k)
        return retrieve_developer(question, store=store, embedder=self.embedder,
                                  top_k=policy.max_documents, min_score=policy.min_similarity,
                                  strategy=settings.docs_retrieval, rrf_k=settings.docs_rrf_k)

    def frequencies(self, policy: Policy) -> Frequencies | None:
        """The developer index's word counts, where its store keeps them; ``None`` on the
        user index (its counts would include pages the person may not see) and for a store
        without them."""
        if policy.profile.index != "developer":
            return None
        store = self.runtime.store(policy.profile.index, self.embedder.profile)
        if not isinstance(store, TermStatistics):
            return None
        return store.term_frequencies

    def passages(self, policy: Policy, access: AccessContext | None, question: str,
                 hits: list[Hit]) -> dict[int, list[str]]:
        """The best sources' other chunks, under the person's filters on the user index."""
        store = self.runtime.store(policy.profile.index, self.embedder.profile)
        vector = self.embedder.embed_query(question)
        if policy.profile.index == "user":
            return source_passages(store, vector, hits, filters=user_filters(_person(access)),
                                   label_key="safe_source_label")
        return source_passages(store, vector, hits, filters=None, label_key=None)


def _person(access: AccessContext | None) -> AccessContext:
    """The user index is never searched without a principal (fail closed)."""
    if access is None:
        raise ValueError("the user index needs the person's access context")
    return access

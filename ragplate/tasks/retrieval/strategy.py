"""The search strategy resolver: what a request's mode may build, and how it degrades.

``fast`` never calls a factory, so it never builds an embedding or rerank class;
``balanced`` builds the serving model's embedder; ``deep`` also builds the reranker. A
factory that is missing or raises serves a cheaper mode with a ``degraded_reason`` (see
:mod:`ragplate.tasks.retrieval.application` for the reasons raised while the search runs).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, Protocol

from ragplate.infra.models.base import Embedder

if TYPE_CHECKING:
    from ragplate.catalog.settings import Settings

log = logging.getLogger(__name__)

Mode = Literal["fast", "balanced", "deep"]
MODES: tuple[Mode, ...] = ("fast", "balanced", "deep")


class RerankScores(Protocol):
    """What a reranker answers: one score per text, in the texts' order."""

    @property
    def scores(self) -> list[float]: ...


class Reranker(Protocol):
    """Scores texts against a query (``RerankClient`` implements it)."""

    def rerank(self, query: str, texts: Sequence[str]) -> RerankScores: ...


EmbedderFactory = Callable[[], Embedder]
RerankerFactory = Callable[[], Reranker]


@dataclass(frozen=True)
class SearchStrategy:
    """The components one request may use, and why it got less than it asked for."""

    mode_requested: Mode
    mode: Mode
    embedder: Embedder | None = None
    reranker: Reranker | None = None
    degraded_reason: str | None = None


def degrade(strategy: SearchStrategy, mode: Mode, reason: str) -> SearchStrategy:
    """A cheaper strategy. The reason is replaced: each degradation lands on a mode no
    dearer than the last, so the latest reason is the one that explains the mode served."""
    return SearchStrategy(strategy.mode_requested, mode,
                          strategy.embedder if mode != "fast" else None,
                          strategy.reranker if mode == "deep" else None,
                          reason)


def resolve_strategy(
    mode: Mode,
    *,
    embedder_factory: EmbedderFactory | None,
    reranker_factory: RerankerFactory | None = None,
) -> SearchStrategy:
    """Build only what ``mode`` needs. ``fast`` never calls a factory; a factory that is
    ``None`` or raises degrades the mode (reasons: :mod:`ragplate.tasks.retrieval.application`)."""
    if mode not in MODES:
        raise ValueError(f"unknown search mode {mode!r}")
    strategy = SearchStrategy(mode, mode)
    if mode == "fast":
        return strategy
    try:
        if embedder_factory is None:
            raise LookupError("no embedder factory")
        embedder = embedder_factory()
    except Exception as exc:
        log.warning("search embedder unavailable (%s); serving keyword search",
                    exc.__class__.__name__)
        return degrade(strategy, "fast", "embedder_unavailable")
    strategy = SearchStrategy(mode, mode, embedder)
    if mode == "balanced":
        return strategy
    try:
        if reranker_factory is None:
            return degrade(strategy, "balanced", "reranker_unavailable")
        return SearchStrategy(mode, mode, embedder, reranker_factory())
    except Exception as exc:
        log.warning("search reranker unavailable (%s)", exc.__class__.__name__)
        return degrade(strategy, "balanced", "reranker_unavailable")


def configured_reranker(settings: Settings) -> RerankerFactory | None:
    """A factory of the ``rerank`` server's client, or ``None`` when none is configured."""
    from ragplate.infra.models.config import RERANK, role_server

    if role_server(RERANK, settings) is None:
        return None

    def build() -> Reranker:
        from ragplate.infra.models.rerank import RerankClient

        return RerankClient.from_settings(settings)

    return build

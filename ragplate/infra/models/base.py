"""The embedder protocol and the probe that is the only way a vector length is trusted."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from ragplate.catalog.errors import DimensionMismatchError, EmbeddingError
from ragplate.catalog.profiles import EmbeddingProfile

PROBE_TEXT = "embedding service probe"


class Embedder(Protocol):
    """Turns texts into vectors for one profile. Prefixes are the embedder's business."""

    profile: EmbeddingProfile

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors for documents, shape ``(len(texts), dims)``."""

    def embed_query(self, text: str) -> np.ndarray:
        """Vector for one search query, shape ``(dims,)``."""


@dataclass(frozen=True)
class ProbeResult:
    """What the probe measured for a profile."""

    profile: str
    model: str
    declared_dimensions: int
    measured_dimensions: int
    #: ``None`` when the embedder refused the vector for its length (not measured).
    norm: float | None

    @property
    def ok(self) -> bool:
        """True when the measured length is the declared one."""
        return self.declared_dimensions == self.measured_dimensions


def probe(embedder: Embedder) -> ProbeResult:
    """Embed the fixed probe text and measure the vector. A vector of another length than
    declared is a result (``ok`` false), not an error: the embedder's own check refuses it,
    and the probe reports the length that check measured."""
    model = str(getattr(embedder, "model_name", embedder.profile.service_model))
    try:
        vector = np.asarray(embedder.embed_query(PROBE_TEXT), dtype=np.float32)
    except DimensionMismatchError as exc:
        return ProbeResult(profile=embedder.profile.key, model=model,
                           declared_dimensions=embedder.profile.dimensions,
                           measured_dimensions=exc.actual, norm=None)
    if vector.ndim != 1 or vector.size == 0:
        raise EmbeddingError(f"profile '{embedder.profile.key}' returned no vector")
    return ProbeResult(
        profile=embedder.profile.key,
        model=model,
        declared_dimensions=embedder.profile.dimensions,
        measured_dimensions=int(vector.size),
        norm=float(np.linalg.norm(vector)),
    )


def check_matrix(profile: EmbeddingProfile, matrix: np.ndarray, expected_rows: int) -> np.ndarray:
    """Validate an embedding answer: row count and the profile's dimensions."""
    array = np.asarray(matrix, dtype=np.float32)
    if array.ndim != 2 or array.shape[0] != expected_rows:
        raise EmbeddingError(
            f"profile '{profile.key}' returned {array.shape[0] if array.ndim == 2 else 0} "
            f"vectors for {expected_rows} texts"
        )
    if array.shape[1] != profile.dimensions:
        raise DimensionMismatchError(profile.key, profile.dimensions, int(array.shape[1]))
    return array

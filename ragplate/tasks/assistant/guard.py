"""The whole input screening of a message: the pattern rules (:mod:`.screening`), then the
intent model of the serving embedding model (:mod:`.intent`), on the vector the retrieval
uses anyway (embedded once, see :class:`RememberingEmbedder`). The model refuses only a
message that also holds one of the catalog's cue words (``INTENT_CUES``): unusual is not
hostile.

Without an intent model for the serving model (another profile, not trained yet) the rules
alone decide, and the verdict says so (``intent_model: false`` in a message's metadata).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import cache
from typing import TYPE_CHECKING

import numpy as np

from ragplate.catalog.guardrails import INTENT_CUES
from ragplate.catalog.intent_model import IntentModel
from ragplate.catalog.profiles import EmbeddingProfile
from ragplate.infra import intent_models
from ragplate.infra.models.base import Embedder
from ragplate.tasks.assistant.screening import (
    ALLOWED,
    Normalised,
    Verdict,
    encoded_blobs,
    screen_normalised,
)

if TYPE_CHECKING:
    from ragplate.infra.runtime import Runtime

INTENT_RULE = "intent-model"


class RememberingEmbedder:
    """An embedder that embeds a query once: the guardrails and the retrieval read the same
    vector."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.profile: EmbeddingProfile = inner.profile
        self._last: tuple[str, np.ndarray] | None = None

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        """As the wrapped embedder."""
        return self.inner.embed_passages(texts)

    def embed_query(self, text: str) -> np.ndarray:
        """The wrapped embedder's vector, computed once per consecutive text."""
        if self._last is None or self._last[0] != text:
            self._last = (text, self.inner.embed_query(text))
        return self._last[1]


def screen_message(runtime: Runtime, text: str, *, max_chars: int | None = None,
                   embedder: Embedder | None = None) -> Verdict:
    """The rules' verdict, then the intent model's when the rules allowed the message."""
    verdict, norm = screen_normalised(text, max_chars=max_chars)
    if not verdict.allowed or norm is None:
        return verdict
    return screen_intent(runtime, text, norm, embedder=embedder)


def screen_intent(runtime: Runtime, text: str, norm: Normalised, *,
                  embedder: Embedder | None = None) -> Verdict:
    """The verdict on a message the rules allowed (``norm``: its normalised form, from
    :func:`~ragplate.tasks.assistant.screening.screen_normalised`): the intent model's
    refusal, or allowed. For a caller that ran the rules itself, so they run once."""
    # The serving profile is a database read: a caller that has an embedder of it passes it.
    embedder = embedder or runtime.embedder(runtime.active_profile())
    model = intent_models.load(runtime.settings.home, embedder.profile.key)
    if model is None:
        return ALLOWED
    vector = embedder.embed_query(text)
    return intent_verdict(model, vector, text, norm) or ALLOWED


def intent_verdict(model: IntentModel, vector: np.ndarray, text: str, norm: Normalised
                   ) -> Verdict | None:
    """The intent model's refusal, or ``None``: it refuses an attack-like message that holds
    a cue word, or that hides something (obfuscation, an encoded run: the cue words may be
    what it hides). Shared by the assistant and ``ragplate bench assistant``."""
    if model.attack_score(vector) <= model.threshold:
        return None
    if _cues().search(norm.text) or norm.obfuscated or encoded_blobs(text):
        return Verdict(False, model.category(vector), INTENT_RULE)
    return None


@cache
def _cues() -> re.Pattern[str]:
    return re.compile(INTENT_CUES)

"""Which model an embeddings server really runs, and whether a profile may use it.

There is no health convention to rely on: :func:`inspect` embeds a fixed text with
``POST /v1/embeddings`` and reads the model the answer names, the vector length and norm
and, where the server has ``GET /info`` (TEI), its ``model_id`` and
``max_client_batch_size``. :meth:`ServerIdentity.refusal` is the verdict a model switch and
its abandon use.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ragplate.catalog.errors import ConfigurationError, RagplateError
from ragplate.catalog.profiles import EmbeddingProfile
from ragplate.catalog.settings import Settings
from ragplate.infra.models.base import PROBE_TEXT
from ragplate.infra.models.openai_compatible import OpenAICompatibleEmbedder

# 4-bit models return vectors normalised to about 1e-6; anything further off was not
# normalised at all.
NORM_TOLERANCE = 1e-2


@dataclass(frozen=True)
class ServerIdentity:
    """What the probe of one profile's server measured."""

    profile: str
    server: str
    endpoint: str
    expected_model: str
    declared_dimensions: int
    normalize: bool
    answer_model: str | None = None
    dimensions: int | None = None
    norm: float | None = None
    info_model_id: str | None = None
    max_client_batch_size: int | None = None
    batch_size: int | None = None
    failure: str | None = None

    def refusal(self) -> str | None:
        """Why the profile must not use this server, or ``None`` when it may."""
        where = f"server '{self.server}' at {self.endpoint}"
        if self.failure is not None:
            return f"{where} did not answer the probe: {self.failure}"
        if self.answer_model is None:
            return f"{where} names no model in its answer"
        if self.answer_model != self.expected_model:
            return (
                f"{where} runs '{self.answer_model}', profile '{self.profile}' expects "
                f"'{self.expected_model}'"
            )
        if self.info_model_id is not None and self.info_model_id != self.expected_model:
            return (
                f"{where} names '{self.info_model_id}' in GET /info, profile "
                f"'{self.profile}' expects '{self.expected_model}'"
            )
        if self.dimensions != self.declared_dimensions:
            return (
                f"{where} returns {self.dimensions} dimensions, profile '{self.profile}' "
                f"declares {self.declared_dimensions}"
            )
        if self.normalize and (self.norm is None or abs(self.norm - 1.0) > NORM_TOLERANCE):
            norm = "unknown" if self.norm is None else f"{self.norm:.4f}"
            return (
                f"{where} returns vectors of norm {norm}, profile "
                f"'{self.profile}' declares normalised vectors"
            )
        return None

    @property
    def ok(self) -> bool:
        """True when :meth:`refusal` has nothing to say."""
        return self.refusal() is None

    def as_dict(self) -> dict[str, Any]:
        """Plain data, with the verdict."""
        return {**asdict(self), "refusal": self.refusal()}


def inspect(
    profile: EmbeddingProfile,
    settings: Settings | None = None,
    *,
    embedder: OpenAICompatibleEmbedder | None = None,
) -> ServerIdentity:
    """Probe the server ``profile`` names. A server that cannot be reached, answers with an
    error or answers something unusable is reported in ``failure``, not raised; only a
    profile that is not ``openai_compatible`` or has no server configured raises
    :class:`ConfigurationError`."""
    if profile.provider != "openai_compatible":
        raise ConfigurationError(
            f"profile '{profile.key}' is not served by a server (provider {profile.provider})"
        )
    owned = embedder is None
    client = embedder or OpenAICompatibleEmbedder(profile, settings)
    try:
        return _probe(profile, client)
    finally:
        if owned:
            client.close()


def _probe(profile: EmbeddingProfile, client: OpenAICompatibleEmbedder) -> ServerIdentity:
    base: dict[str, Any] = {
        "profile": profile.key,
        "server": client.server.name,
        "endpoint": client.endpoint,
        "expected_model": profile.service_model,
        "declared_dimensions": profile.dimensions,
        "normalize": profile.normalize,
        "batch_size": client.server.batch_size,
    }
    try:
        answer = client.request([PROBE_TEXT], "query", verify=False)
    except RagplateError as exc:
        return ServerIdentity(**base, failure=str(exc))
    info = client.server_info()
    vector = answer.vectors[0]
    return ServerIdentity(
        **base,
        answer_model=answer.model,
        dimensions=int(vector.size),
        norm=float(np.linalg.norm(vector)),
        info_model_id=info.model_id if info else None,
        max_client_batch_size=info.max_client_batch_size if info else None,
    )

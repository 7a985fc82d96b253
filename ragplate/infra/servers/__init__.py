"""Clients of the self-hosted AI servers that speak standard APIs.

- :mod:`.config` resolves a server by name (``embeddings``, a profile's own, ``rerank``,
  ``transcription``) from ``RAGPLATE_SERVERS__<NAME>__<FIELD>`` only;
- :mod:`.request_id`, :mod:`.errors` and :mod:`.calls`: one id per call, one warning and one
  :class:`~ragplate.catalog.errors.SelfHostedServiceError` per failed call;
- :mod:`.batcher` and :mod:`.embeddings`: the adaptive batcher and the ``/v1/embeddings``
  wire format used by :class:`ragplate.infra.embedders.OpenAICompatibleEmbedder`;
- :mod:`.info`: TEI's ``GET /info``;
- :mod:`.identity`: which model a server runs (``inspect()``, ``refusal()``);
- :mod:`.rerank` and :mod:`.transcription`: the TEI/Cohere rerank and OpenAI-style
  transcription clients;
- :mod:`.check`: ``ragplate servers check``.

:mod:`.identity` and :mod:`.check` build on the embedders package, which builds on this
one, so they are imported from their modules rather than re-exported here.
"""

from __future__ import annotations

from ragplate.catalog.errors import RerankAnswerError, SelfHostedServiceError
from ragplate.infra.servers.batcher import AdaptiveBatcher
from ragplate.infra.servers.config import (
    ServerConfig,
    embeddings_server,
    embeddings_server_named,
    role_server,
    safe_url,
)
from ragplate.infra.servers.info import ServerInfo, server_info
from ragplate.infra.servers.request_id import HEADER, new_request_id
from ragplate.infra.servers.rerank import RerankClient, RerankResult
from ragplate.infra.servers.transcription import Transcriber

__all__ = [
    "HEADER",
    "AdaptiveBatcher",
    "RerankAnswerError",
    "RerankClient",
    "RerankResult",
    "SelfHostedServiceError",
    "ServerConfig",
    "ServerInfo",
    "Transcriber",
    "embeddings_server",
    "embeddings_server_named",
    "new_request_id",
    "role_server",
    "safe_url",
    "server_info",
]

"""Cross-encoder reranking through TEI ``POST /rerank`` or a Cohere-style ``/rerank``
(Infinity, under its ``--url-prefix``, i.e. ``/v1/rerank``).

One query and the texts go out; each score is placed by the index the server answers with.
A repeated, missing or out-of-range index, or a count other than the texts, raises
:class:`~ragplate.catalog.errors.RerankAnswerError`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import httpx

from ragplate.catalog.errors import RerankAnswerError
from ragplate.catalog.settings import Settings
from ragplate.infra.models.calls import make_client, send
from ragplate.infra.models.config import RERANK, ServerConfig, require_role_server, safe_url
from ragplate.infra.models.info import server_info


@dataclass(frozen=True)
class RerankResult:
    """Scores in the order of the texts sent: ``scores[i]`` belongs to ``texts[i]``."""

    scores: list[float]
    model: str | None
    request_id: str | None


class RerankClient:
    """Reranks with the ``rerank`` server; ``server.api`` is ``tei`` or ``cohere``."""

    # One retry, with the same request id, when the server or its proxy was briefly away.
    retries = 1

    def __init__(self, server: ServerConfig, *, transport: httpx.BaseTransport | None = None):
        if server.api not in ("tei", "cohere"):
            raise ValueError(f"unknown rerank api {server.api!r}")
        self.server = server
        self.url = server.endpoint("/rerank") if server.api == "tei" else server.v1_endpoint(
            "/rerank"
        )
        self.endpoint = safe_url(self.url)
        self._client = make_client(server, transport)

    @classmethod
    def from_settings(cls, settings: Settings) -> RerankClient:
        """The client of the configured ``rerank`` server (ConfigurationError if none)."""
        return cls(require_role_server(RERANK, settings))

    def body(self, query: str, texts: Sequence[str]) -> dict[str, Any]:
        """The request body of the server's API."""
        if self.server.api == "tei":
            # Truncating keeps one long text from failing the whole call with 413/422.
            return {"query": query, "texts": list(texts), "truncate": True}
        body: dict[str, Any] = {"query": query, "documents": list(texts), "return_documents": False}
        if self.server.model:
            body["model"] = self.server.model
        return body

    def rerank(self, query: str, texts: Sequence[str]) -> RerankResult:
        """Score every text against ``query``; raises SelfHostedServiceError when the
        call fails and RerankAnswerError when the answer cannot be placed."""
        if not texts:
            return RerankResult(scores=[], model=None, request_id=None)
        response, request_id = send(
            self._client,
            self.server,
            "POST",
            self.url,
            retries=self.retries,
            json=self.body(query, texts),
        )
        try:
            payload = response.json()
        except ValueError:
            raise RerankAnswerError(f"rerank server at {self.endpoint} answered non-JSON") from None
        if self.server.api == "tei":
            entries = payload if isinstance(payload, list) else None
            score_key, model = "score", None
        else:
            entries = payload.get("results") if isinstance(payload, dict) else None
            score_key = "relevance_score"
            named = payload.get("model") if isinstance(payload, dict) else None
            model = named if isinstance(named, str) and named else None
        if entries is None:
            raise RerankAnswerError(f"rerank server at {self.endpoint} answered without scores")
        scores = place_scores(entries, score_key, len(texts), self.endpoint)
        return RerankResult(scores=scores, model=model or self.model_name(), request_id=request_id)

    def model_name(self) -> str | None:
        """The reranker's model: TEI's ``GET /info`` (cached ten minutes, never a reason to
        fail), else the configured ``model``."""
        if self.server.api == "tei":
            info = server_info(self.server, self._client)
            if info is not None:
                return info.model_id
        return self.server.model

    def close(self) -> None:
        """Close the connection pool."""
        self._client.close()


def place_scores(entries: list[Any], score_key: str, count: int, endpoint: str) -> list[float]:
    """Scores of ``entries`` (``{"index": i, score_key: s}``) placed at their index."""
    if len(entries) != count:
        raise RerankAnswerError(
            f"rerank server at {endpoint} answered {len(entries)} scores for {count} texts"
        )
    scores: list[float | None] = [None] * count
    for entry in entries:
        index = entry.get("index") if isinstance(entry, dict) else None
        score = entry.get(score_key) if isinstance(entry, dict) else None
        if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < count:
            raise RerankAnswerError(f"rerank server at {endpoint} answered index {index!r:.40}")
        if scores[index] is not None:
            raise RerankAnswerError(f"rerank server at {endpoint} repeated index {index}")
        if not isinstance(score, int | float) or isinstance(score, bool) or not math.isfinite(
            score
        ):
            raise RerankAnswerError(f"rerank server at {endpoint} answered no score at {index}")
        scores[index] = float(score)
    missing = [i for i, score in enumerate(scores) if score is None]
    if missing:  # unreachable with the count and repeat checks, kept as the last guard
        raise RerankAnswerError(f"rerank server at {endpoint} left out index {missing[0]}")
    return [score for score in scores if score is not None]

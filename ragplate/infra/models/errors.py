"""Failures of self-hosted servers: the one warning they log and the error they raise.

What may appear in a log line or an exception: the service (embeddings, rerank,
transcription), the endpoint reduced to scheme, host, port and path, the HTTP status and the
request id. What never appears: a text, a query, a file name, a key, a query string or the
body of an error answer.
"""

from __future__ import annotations

import logging
import re

from ragplate.catalog.errors import SelfHostedServiceError
from ragplate.infra.models.config import safe_url

__all__ = [
    "FAILED",
    "UNHANDLED",
    "SelfHostedServiceError",
    "describe",
    "http_failure",
    "log_unhandled",
    "reduce_urls",
]

logger = logging.getLogger("ragplate.servers")

FAILED = "Self-hosted AI service call failed"
UNHANDLED = "Self-hosted AI service call could not be handled"

_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://[^\s'\"<>]+")
_MAX_REASON = 300


def reduce_urls(text: str) -> str:
    """Every URL in ``text`` reduced to scheme, host, port and path."""
    return _URL.sub(lambda match: safe_url(match.group(0)), text)


def describe(exc: Exception) -> str:
    """The reason of an HTTP exception, safe to show: its first line only (httpx adds a
    documentation link on the second), URLs reduced, bounded in length."""
    import httpx  # here, not at the top: see ragplate.infra.models

    if isinstance(exc, httpx.HTTPStatusError):
        text = str(exc).splitlines()[0] if str(exc) else f"HTTP {exc.response.status_code}"
    else:
        detail = str(exc).splitlines()[0] if str(exc) else "no detail"
        text = f"{type(exc).__name__}: {detail}"
    return reduce_urls(text)[:_MAX_REASON]


def http_failure(
    service: str, url: str, request_id: str, exc: Exception
) -> SelfHostedServiceError:
    """Log the one warning of a failed call and return the error to raise.

    The caller raises it ``from None``: the HTTP exception's own text holds the full URL
    (credentials, query string), so chaining it would put them in every traceback.
    """
    import httpx

    status = exc.response.status_code if isinstance(exc, httpx.HTTPStatusError) else None
    error = SelfHostedServiceError(
        service=service,
        endpoint=safe_url(url),
        status=status,
        request_id=request_id,
        reason=describe(exc),
    )
    logger.warning(
        "%s: service=%s endpoint=%s status=%s request_id=%s",
        FAILED,
        error.service,
        error.endpoint,
        "null" if status is None else status,
        request_id,
        extra=error.context(),
    )
    return error


def log_unhandled(service: str, url: str, request_id: str | None, exc: BaseException) -> None:
    """Log a call that reached the server but could not be handled (a bug, an answer the
    client cannot read) apart from outages: the exception class only, never its text."""
    logger.warning(
        "%s: service=%s endpoint=%s request_id=%s exception=%s",
        UNHANDLED,
        service,
        safe_url(url),
        request_id,
        type(exc).__name__,
        extra={
            "service": service,
            "endpoint": safe_url(url),
            "request_id": request_id,
            "exception": type(exc).__name__,
        },
    )

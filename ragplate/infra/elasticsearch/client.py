"""Connecting to Elasticsearch with the official 8.x client, and its errors as ragplate's.

One client per process and cluster (the client is thread-safe and pools connections). The
first use checks the server's major version: the 8.x client speaks to an 8.x server only
(``elasticsearch>=8.15,<9``), and another major answers with errors that name nothing, so
a mismatch is refused once, in one line. Every API error becomes a
:class:`~ragplate.catalog.errors.SearchEngineError` naming the index it concerns.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from ragplate.catalog.errors import (
    ConfigurationError,
    EngineVersionError,
    IndexMappingError,
    SearchEngineError,
)

if TYPE_CHECKING:
    from elasticsearch import Elasticsearch

    from ragplate.catalog.settings import Settings

#: The server major version the client speaks (the client's own major).
MAJOR = 8
T = TypeVar("T")

_clients: dict[tuple[Any, ...], Elasticsearch] = {}
_checked: set[str] = set()
_lock = threading.Lock()

#: Error types that mean "this index exists with another mapping".
_MAPPING_ERRORS = frozenset({
    "mapper_parsing_exception", "document_parsing_exception",
    "strict_dynamic_mapping_exception", "resource_already_exists_exception",
})
#: A mapping conflict only where the request creates an index or writes documents (the
#: calls given ``recreate``): a search answers it for a malformed query too.
_WRITE_MAPPING_ERRORS = _MAPPING_ERRORS | {"illegal_argument_exception"}


def _key(settings: Settings) -> tuple[Any, ...]:
    secret = settings.elasticsearch_api_key or settings.elasticsearch_password
    return (settings.elasticsearch_url, settings.elasticsearch_username,
            secret.get_secret_value() if secret else None, settings.elasticsearch_ca_file,
            settings.elasticsearch_timeout, settings.elasticsearch_retries)


def connect(settings: Settings) -> Elasticsearch:
    """The process's client of ``RAGPLATE_ELASTICSEARCH_URL`` (with its API key or basic
    auth and CA file), its server's major version checked on first use."""
    if not settings.elasticsearch_url:
        raise ConfigurationError("RAGPLATE_ELASTICSEARCH_URL is not set")
    key = _key(settings)
    with _lock:
        client = _clients.get(key)
        if client is None:
            client = _build(settings)
            _clients[key] = client
    check_version(client, settings.elasticsearch_url)
    return client


def _build(settings: Settings) -> Elasticsearch:
    from elasticsearch import Elasticsearch

    options: dict[str, Any] = {
        "request_timeout": settings.elasticsearch_timeout,
        # 429 (a cluster pushing back) and a node restarting are worth another try.
        "retry_on_status": (429, 502, 503, 504),
        "retry_on_timeout": True,
        "max_retries": settings.elasticsearch_retries,
    }
    if settings.elasticsearch_api_key is not None:
        options["api_key"] = settings.elasticsearch_api_key.get_secret_value()
    elif settings.elasticsearch_username:
        password = settings.elasticsearch_password
        options["basic_auth"] = (settings.elasticsearch_username,
                                 password.get_secret_value() if password else "")
    if settings.elasticsearch_ca_file is not None:
        options["ca_certs"] = str(settings.elasticsearch_ca_file)
    return Elasticsearch(str(settings.elasticsearch_url), **options)


def check_version(client: Elasticsearch, url: str) -> None:
    """Refuse a server whose major version is not :data:`MAJOR` (once per URL)."""
    if url in _checked:
        return
    info = call(lambda: client.info(), CLUSTER)
    number = str(info.get("version", {}).get("number", "?"))
    if number.split(".", 1)[0] != str(MAJOR):
        raise EngineVersionError(
            f"Elasticsearch at {safe_url(url)} runs {number}; ragplate's client speaks "
            f"{MAJOR}.x (elasticsearch>={MAJOR}.15,<{MAJOR + 1})")
    _checked.add(url)


def forget_clients() -> None:
    """Close and forget every client (tests, and a process that changes clusters)."""
    with _lock:
        for client in _clients.values():
            client.close()
        _clients.clear()
        _checked.clear()


def safe_url(url: str) -> str:
    """``url`` without credentials."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    host = parts.hostname or ""
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}{parts.path}"


def reason(exc: BaseException) -> str:
    """One line: the error type and reason Elasticsearch gave, or the exception's class."""
    from elasticsearch import ApiError, TransportError

    if isinstance(exc, ApiError):
        info = exc.info if isinstance(exc.info, dict) else {}
        error = info.get("error", {})
        if isinstance(error, dict):
            kind, why = error.get("type"), error.get("reason")
            if kind or why:
                return f"{kind}: {why}".replace("\n", " ")[:300]
        return f"HTTP {exc.meta.status}: {str(exc.message)[:200]}"
    if isinstance(exc, TransportError):
        return f"{exc.__class__.__name__}: {str(exc.message)[:200]}"
    return exc.__class__.__name__


def error_type(exc: BaseException) -> str | None:
    """Elasticsearch's error type (``index_not_found_exception``…), if it gave one."""
    from elasticsearch import ApiError

    if isinstance(exc, ApiError) and isinstance(exc.info, dict):
        error = exc.info.get("error")
        if isinstance(error, dict):
            return str(error.get("type"))
    return None


#: What :func:`call` names for a request about the cluster, not an index.
CLUSTER = "the cluster"


def call(request: Callable[[], T], index: str, *, recreate: str | None = None) -> T:
    """Run ``request``; an error becomes one :class:`SearchEngineError` line naming
    ``index`` (a mapping conflict an :class:`IndexMappingError` naming ``recreate``, the
    command that recreates the index)."""
    from elasticsearch import ApiError, TransportError

    try:
        return request()
    except ApiError as exc:
        kind = error_type(exc)
        conflicts = _MAPPING_ERRORS if recreate is None else _WRITE_MAPPING_ERRORS
        if kind in conflicts and exc.meta.status == 400:
            hint = f"; recreate it with `{recreate}`" if recreate else ""
            raise IndexMappingError(
                f"Elasticsearch index {index}: mapping conflict ({reason(exc)}){hint}"
            ) from None
        raise SearchEngineError(f"Elasticsearch index {index}: {reason(exc)}") from None
    except TransportError as exc:
        where = "" if index == CLUSTER else f" (for index {index})"
        raise SearchEngineError(
            f"Elasticsearch{where} is unreachable: {reason(exc)}") from None


def call_or_none(request: Callable[[], T], index: str) -> T | None:
    """:func:`call`, with ``None`` when Elasticsearch answers 404 (no such index or
    alias)."""
    from elasticsearch import NotFoundError

    def guarded() -> T | None:
        try:
            return request()
        except NotFoundError:
            return None

    return call(guarded, index)

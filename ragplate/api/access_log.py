"""Credentials out of the access log.

The API reads a token from the ``Authorization`` header only, yet a client may still put
one in a URL (``?token=rp_…``, ``?api_key=…``), and the server's access log writes every
URL as it arrived. The filter rewrites the logged path before it is formatted: any
``rp_`` token anywhere in it, and the value of a query parameter named like a credential,
become ``[redacted]``. The request itself is untouched (and answered 401 as usual).
"""

from __future__ import annotations

import logging
import re
from urllib.parse import parse_qsl, quote

from ragplate.catalog.people import TOKEN_PREFIX

ACCESS_LOGGER = "uvicorn.access"
REDACTED = "[redacted]"
#: Query parameters whose value is a credential whatever it looks like.
CREDENTIAL_KEYS = frozenset({"token", "access_token", "api_key", "apikey", "key", "auth",
                             "authorization", "bearer", "password", "secret"})
_TOKEN = re.compile(re.escape(TOKEN_PREFIX) + r"[A-Za-z0-9_\-%]+")


def redact_path(path: str) -> str:
    """``path`` (with its query string) without any credential in it."""
    base, mark, query = path.partition("?")
    base = _TOKEN.sub(REDACTED, base)
    if not mark:
        return base
    pairs = []
    for key, value in parse_qsl(query, keep_blank_values=True):
        secret = key.lower().replace("-", "_") in CREDENTIAL_KEYS
        shown = REDACTED if secret else _TOKEN.sub(REDACTED, value)
        pairs.append(f"{quote(key, safe='')}={quote(shown, safe='[]')}")
    return f"{base}?{'&'.join(pairs)}"


class RedactCredentials(logging.Filter):
    """Rewrites the path argument of an access-log record (see :func:`redact_path`)."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        # The server logs (client, method, path, http version, status).
        if isinstance(args, tuple) and len(args) >= 3 and isinstance(args[2], str):
            record.args = (*args[:2], redact_path(args[2]), *args[3:])
        return True


def install() -> None:
    """Add the filter to the access logger once, however many apps are built."""
    logger = logging.getLogger(ACCESS_LOGGER)
    if not any(isinstance(f, RedactCredentials) for f in logger.filters):
        logger.addFilter(RedactCredentials())

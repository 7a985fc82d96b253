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
#: A query parameter whose name (``-`` read as ``_``) ends with one of these words holds a
#: credential whatever its value looks like: ``token``, ``access_token``, ``X-Api-Key``.
_CREDENTIAL_NAME = re.compile(r"(?:^|_)(?:api_?key|key|(?:access)?token|auth|authorization|"
                              r"bearer|password|passwd|secret|credentials?)$", re.IGNORECASE)
_TOKEN = re.compile(re.escape(TOKEN_PREFIX) + r"[A-Za-z0-9_\-%]+")


def redact_path(path: str) -> str:
    """``path`` (with its query string) without any credential in it."""
    base, mark, query = path.partition("?")
    base = _TOKEN.sub(REDACTED, base)
    if not mark:
        return base
    pairs = []
    for key, value in parse_qsl(query, keep_blank_values=True):
        secret = _CREDENTIAL_NAME.search(key.replace("-", "_")) is not None
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

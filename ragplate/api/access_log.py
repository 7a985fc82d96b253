"""Credentials out of the access log.

The API reads a token from the ``Authorization`` header only, yet a client may still put
one in a URL (``?token=rp_…``, ``?api_key=…``), and the server's access log writes every
URL as it arrived. The filter rewrites the logged path before it is formatted: any ``rp_``
token anywhere in it (path, parameter name or value, percent-encoded or not), and the value
of a query parameter named like a credential, become ``[redacted]``; a path with nothing to
redact is logged exactly as it came. The request itself is untouched (a 401 as usual).

The same tests decide which names a client sent an error may repeat (:func:`repeatable`):
an unknown query parameter or body field may be a secret put in the wrong place.
"""

from __future__ import annotations

import logging
import re
from urllib.parse import unquote_plus

from ragplate.catalog.people import TOKEN_PREFIX

ACCESS_LOGGER = "uvicorn.access"
REDACTED = "[redacted]"
#: A parameter whose name, as words (``X-Api-Key``, ``authToken``, ``client_secret``,
#: ``token[]``, ``session_id``), ends with one of these holds a credential whatever its value
#: looks like; ``code`` (an OAuth grant) only as the whole name, not ``zip_code``.
_CREDENTIAL_NAME = re.compile(
    r"(?:^|_)(?:api_?key|key|(?:access_?)?token|auth|authorization|bearer|password|passwd|"
    r"pwd|secret|credentials?|signature|sig|jwt|session(?:_?id)?|sid|cookie|otp|ticket)$"
    r"|^code$", re.IGNORECASE)
# Matched in raw text, where the prefix's underscore may arrive percent-encoded.
_TOKEN = re.compile(re.escape(TOKEN_PREFIX[:-1]) + r"(?:_|%5[Ff])[A-Za-z0-9_\-%]+")


def _credential_name(name: str) -> bool:
    words = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name)  # authToken -> auth_Token
    words = re.sub(r"[-.\s]", "_", words).removesuffix("[]")
    return _CREDENTIAL_NAME.search(words) is not None


def holds_token(text: str) -> bool:
    """Whether ``text`` (raw or percent-encoded) holds an ``rp_`` token."""
    return _TOKEN.search(text) is not None or _TOKEN.search(unquote_plus(text)) is not None


# In decoded text a token starts a word: "corp_acme" holds none.
_TOKEN_WORD = re.compile(r"(?<![A-Za-z0-9])" + re.escape(TOKEN_PREFIX) + r"[A-Za-z0-9_\-]+")


def without_tokens(text: str) -> str:
    """``text`` (decoded, as an error holds it) with every ``rp_`` token in it, whole or
    cut short, ``[redacted]``: an error repeating a value a client sent (a path's record
    key, an entity name) never repeats a token put in the wrong place."""
    return _TOKEN_WORD.sub(REDACTED, text)


#: A name an error may repeat: letters joined by ``_ . -``, an optional ``[]``, at most 32
#: characters. No digit: a name with one (``ghp_…``, ``AKIA…``, ``hunter2``) may be a secret
#: a client put in the wrong place, and errors are not a place to repeat it.
_REPEATABLE = re.compile(r"[A-Za-z][A-Za-z_.\-]{0,31}(?:\[\])?")


def repeatable(name: str) -> bool:
    """Whether an error may repeat ``name``, a parameter or field name a client sent: it
    reads like a name and holds no token."""
    return _REPEATABLE.fullmatch(name) is not None and not holds_token(name)


def _redact_pair(pair: str) -> str:
    key, mark, value = pair.partition("=")
    if holds_token(key):
        return REDACTED + (f"={REDACTED}" if mark else "")
    if mark and (_credential_name(unquote_plus(key)) or _TOKEN.search(unquote_plus(value))):
        return f"{key}={REDACTED}"
    return pair


def redact_path(path: str) -> str:
    """``path`` (with its query string) without any credential in it; every other
    character as it arrived."""
    base, mark, query = path.partition("?")
    base = _TOKEN.sub(REDACTED, base)
    if not mark:
        return base
    # Split as the server does ('&' only), so nothing it would read as a value is missed.
    return f"{base}?{'&'.join(_redact_pair(pair) for pair in query.split('&'))}"


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

"""The request id: one per call, sent as ``X-Request-Id`` so a server log can be searched."""

from __future__ import annotations

import re
import secrets

HEADER = "X-Request-Id"
PATTERN = re.compile(r"^[0-9a-f]{32}$")


def new_request_id() -> str:
    """A new id of 32 lowercase hex characters."""
    return secrets.token_hex(16)

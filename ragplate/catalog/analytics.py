"""Documentation query analytics: the one field set a query record may hold, and how a
person is referred to in it.

The log is optional and write-only: nothing in ragplate reads it to answer, rank or tune.
A record holds exactly :data:`FIELDS` (a store refuses any other) — never the answer, a
document's text or the person's id: ``user_ref`` is HMAC-SHA256 of the id under the
application key.
"""

from __future__ import annotations

import hashlib
import hmac
from typing import Literal

from ragplate.catalog.errors import InvalidInputError

QueryTextMode = Literal["raw", "off"]

#: Every field of a query record, in order (the privacy review's list; a change needs a
#: new review).
FIELDS: tuple[str, ...] = ("id", "logged_at", "user_ref", "tenant", "profile", "locale",
                           "query", "retrieved_count", "citation_count", "answered",
                           "latency_ms", "index")


class AnalyticsFieldError(InvalidInputError):
    """A query record holding a field outside :data:`FIELDS`."""


def check_fields(record: dict[str, object]) -> None:
    """:class:`AnalyticsFieldError` naming each field of ``record`` outside :data:`FIELDS`."""
    extra = sorted(set(record) - set(FIELDS))
    if extra:
        raise AnalyticsFieldError(f"a query record holds no field {', '.join(extra)} "
                                  f"(fields: {', '.join(FIELDS)})")


def user_ref(user_id: int, key: str) -> str:
    """HMAC-SHA256 of the user id (as decimal text) under ``key``, in hex."""
    return hmac.new(key.encode("utf-8"), str(user_id).encode("ascii"),
                    hashlib.sha256).hexdigest()

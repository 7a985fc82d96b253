"""Recording an assistant turn in the query analytics, once its answer is stored.

:func:`record_turn` decides whether a turn is logged — the switch is on, the turn was
answered or abstained on (:data:`LOGGED_STATUSES`), the person is neither a guest nor acted
as with an operator's token, and an application key is configured (a person is referred to
only by an HMAC) — builds the record of exactly the privacy review's fields and hands it to
the process's writer. In ``raw`` mode the question is kept with every secret in it (a
token, a password, a key) replaced by ``[redacted]``, by the rules that keep secrets out of
answers. Nothing here can fail or delay the answer: any error is logged with its class
only.
"""

from __future__ import annotations

import logging
import uuid
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from ragplate.catalog.analytics import check_fields, user_ref
from ragplate.catalog.people import GLOBAL_TENANT, Person
from ragplate.catalog.settings import Settings
from ragplate.tasks.assistant.output_policy import redact_secrets

if TYPE_CHECKING:
    from ragplate.infra.runtime import Runtime

logger = logging.getLogger("ragplate.analytics")

#: The turns logged: a question answered or abstained on. Not a refusal, nor a
#: clarification (the assistant asked back: nothing was yet answered or missed), which
#: would count as an abstention (``answered`` false).
LOGGED_STATUSES = frozenset({"answered", "abstained"})


def build_record(settings: Settings, *, person: Person, profile: str, index: str,
                 question: str, status: str, retrieved: int, citations: int,
                 latency_ms: float, now: datetime | None = None) -> dict[str, Any] | None:
    """The record of one turn, or ``None`` when it is not logged (see the module
    docstring)."""
    if not settings.query_logging_enabled or status not in LOGGED_STATUSES:
        return None
    if person.is_guest or person.impersonated_by is not None:
        return None
    if settings.app_key is None:
        logger.warning("query logging is on but RAGPLATE_APP_KEY is not set: not logged")
        return None
    record = {
        "id": uuid.uuid4(), "logged_at": now or datetime.now(UTC),
        "user_ref": user_ref(person.id, settings.app_key.get_secret_value()),
        "tenant": person.tenant or GLOBAL_TENANT, "profile": profile,
        "locale": person.locale,
        "query": (redact_secrets(question)
                  if settings.query_logging_query_text_mode == "raw" else None),
        "retrieved_count": retrieved, "citation_count": citations,
        "answered": status == "answered", "latency_ms": round(latency_ms, 2), "index": index}
    check_fields(record)
    return record


def record_turn(runtime: Runtime, *, person: Person, profile: str, index: str,
                question: str, status: str, metadata: dict[str, Any], citations: int) -> None:
    """Hand the stored turn to the writer when it is logged; never raises."""
    try:
        latency = metadata.get("latency_ms") or {}
        record = build_record(runtime.settings, person=person, profile=profile, index=index,
                              question=question, status=status,
                              retrieved=int(metadata.get("retrieved", 0)),
                              citations=citations,
                              latency_ms=float(latency.get("retrieval", 0.0)))
        if record is not None:
            runtime.query_writer.submit(record, user_id=person.id)
    except Exception as exc:
        logger.warning("query record not built (%s)", exc.__class__.__name__)

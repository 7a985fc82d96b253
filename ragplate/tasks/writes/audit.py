"""The audit trail of assistant writes: every proposal, refused proposal, confirmation and
rejection, as a log line (``Assistant write``) and a row of ``assistant_write_audit``.

Both carry the actor, the conversation, the tool, the entity, the operation, how many
records, a SHA-256 of the payload and the outcome — never a value of the payload.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from ragplate.catalog.errors import InvalidInputError
from ragplate.catalog.people import Person
from ragplate.catalog.text import parse_span
from ragplate.infra import writes as writes_sql
from ragplate.tasks.crud.payloads import payload_sha256

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection, Engine

    from ragplate.tasks.writes.proposals import Draft

#: The audit trail's log: at INFO, which :func:`show_in_log` lets through (the console of
#: every other library shows warnings only).
AUDIT_LOGGER = "ragplate.assistant.audit"
logger = logging.getLogger(AUDIT_LOGGER)


def show_in_log() -> None:
    """Let the audit lines through the console log (the API does, at its start)."""
    logging.getLogger(AUDIT_LOGGER).setLevel(logging.INFO)

#: The columns of an event, in the order the CLI shows them.
COLUMNS = ("at", "event", "actor_id", "conversation_id", "proposal_id", "tool", "entity",
           "operation", "record_count", "payload_sha256", "outcome")


def refusal_event(person: Person, *, tool: str, entity: str, operation: str, outcome: str,
                  payload: Mapping[str, Any]) -> dict[str, Any]:
    """A proposal the data tools refused (no proposal row exists for it)."""
    return {"event": "refused", "actor_id": person.id, "proposal_id": None, "tool": tool,
            "entity": entity, "operation": operation, "record_count": 0,
            "payload_sha256": payload_sha256(payload), "outcome": outcome}


def proposal_event(draft: Draft, person: Person) -> dict[str, Any]:
    """A proposal stored with its message."""
    return {"event": "proposed", "actor_id": person.id, "proposal_id": draft.id,
            "tool": draft.tool, "entity": draft.entity, "operation": draft.operation,
            "record_count": len(draft.record_keys), "payload_sha256": draft.payload_sha256,
            "outcome": "proposed"}


def decision_event(proposal: Mapping[str, Any], *, event: str, outcome: str
                   ) -> dict[str, Any]:
    """The owner's decision on a stored proposal (``event`` confirmed or rejected)."""
    return {"event": event, "actor_id": proposal["user_id"], "proposal_id": proposal["id"],
            "tool": proposal["tool"], "entity": proposal["entity"],
            "operation": proposal["operation"], "record_count": len(proposal["record_keys"]),
            "payload_sha256": proposal["payload_sha256"], "outcome": outcome}


def record(conn: Connection, event: Mapping[str, Any], *, conversation_id: uuid.UUID) -> None:
    """Write ``event`` in the caller's transaction, and log it."""
    row = {**event, "conversation_id": conversation_id}
    writes_sql.insert_audit(conn, row)
    fields = {k: str(v) if isinstance(v, uuid.UUID) else v for k, v in row.items()}
    logger.info("Assistant write: event=%s actor=%s conversation=%s tool=%s entity=%s "
                "operation=%s records=%s payload_sha256=%s outcome=%s",
                fields["event"], fields["actor_id"], fields["conversation_id"], fields["tool"],
                fields["entity"], fields["operation"], fields["record_count"],
                fields["payload_sha256"], fields["outcome"],
                extra={"assistant_write": fields})


def events(engine: Engine, *, since: datetime | None = None, limit: int = 1000
           ) -> list[dict[str, Any]]:
    """The audit events from ``since`` on, oldest first (the newest ``limit``), as JSON
    values."""
    with engine.connect() as conn:
        rows = writes_sql.list_audit(conn, since=since, limit=limit)
    return [{name: (row[name].astimezone(UTC).isoformat() if isinstance(row[name], datetime) else
                    str(row[name]) if isinstance(row[name], uuid.UUID) else row[name])
             for name in COLUMNS} for row in rows]


def parse_since(text: str, now: datetime | None = None) -> datetime:
    """``--since``: an ISO date or time (UTC when it names no zone) or a span back from
    ``now`` (``30m``, ``24h``, ``7d``); :class:`InvalidInputError` naming the value (also
    a moment that has no UTC time: comparing it would overflow)."""
    span = parse_span(text)
    if span is not None:
        start = now or datetime.now(UTC)
        # A span longer than the calendar reaches back means from the beginning.
        return start - min(span, start - datetime.min.replace(tzinfo=UTC))
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise InvalidInputError(f"--since: {text[:40]!r} is neither a date or time "
                                "(2026-12-01, 2026-12-01T08:00Z) nor a span (30m, 24h, "
                                "7d)") from None
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    try:  # a moment the calendar holds in its own zone but not in UTC (year 1 or 9999)
        moment.astimezone(UTC)
    except OverflowError:
        raise InvalidInputError(f"--since: {text[:40]!r} is outside the calendar once read "
                                "in UTC (years 1 to 9999)") from None
    return moment

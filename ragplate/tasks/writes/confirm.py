"""The person's decision on a write the assistant proposed: read, confirm or reject it.

Only the proposal's owner, in a conversation still theirs, reaches it (anyone else: a 404,
as for a proposal that does not exist). Confirming applies the stored payload through the
CRUD service after deciding again the operator's opt-in, the permission and the row-level
ACL: the outcome is ``applied``, ``pending_approval`` (with the modification ids),
``failed`` (nothing written) or ``expired``. The decision, the write and the audit row
commit in one transaction that holds the proposal's row lock, so a proposal confirmed many
times at once is applied once, and every later decision answers the first one.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, Literal

from sqlalchemy.engine import Connection

from ragplate.catalog.assistant import compile_policy
from ragplate.catalog.crud import WriteOutcome, crud_entity
from ragplate.catalog.errors import InvalidInputError, NotFoundError, RagplateError
from ragplate.catalog.people import Person
from ragplate.catalog.settings import Settings
from ragplate.catalog.writes import DECIDED, MAX_IDEMPOTENCY_KEY_CHARS, base_operation
from ragplate.infra import crud as crud_sql
from ragplate.infra import writes as writes_sql
from ragplate.tasks.crud.service import CrudService
from ragplate.tasks.writes import audit
from ragplate.tasks.writes.offered import offered_for

Decision = Literal["confirm", "reject"]


def check_idempotency_key(key: str | None) -> str | None:
    """The header's value when it is 1 to 255 visible ASCII characters; else
    :class:`InvalidInputError` naming it."""
    if key is None:
        return None
    if not 1 <= len(key) <= MAX_IDEMPOTENCY_KEY_CHARS or not all(
            "!" <= c <= "~" for c in key):
        raise InvalidInputError(f"Idempotency-Key: 1 to {MAX_IDEMPOTENCY_KEY_CHARS} visible "
                                "ASCII characters")
    return key


def view(proposal: dict[str, Any], *, now: datetime | None = None,
         approvals: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """The public shape of a stored proposal (the ``metadata.writes`` entry, and where it
    lives); one still ``proposed`` past its expiry at ``now`` reads ``expired`` (it is
    stored so when a decision arrives). ``approvals``: what approvers decided of a
    ``pending_approval`` proposal's modifications (:func:`approvals_of`)."""
    module, _, entity = proposal["entity"].partition(".")
    stamp = proposal["resolved_at"]
    status = proposal["status"]
    if status == "proposed" and now is not None and now >= proposal["expires_at"]:
        status = "expired"
    return {"id": str(proposal["id"]), "tool": proposal["tool"], "module": module,
            "entity": entity, "operation": proposal["operation"],
            "status": status, "acting_user_id": proposal["user_id"],
            "acting_user_name": proposal["acting_user_name"],
            "summary": proposal["summary"], "requires_approval": proposal["requires_approval"],
            "record_count": len(proposal["record_keys"]),
            "outcome": proposal["outcome"] or None,
            "record_ids": list(proposal["record_keys"]),
            "changes": dict(proposal["payload"]),
            "expires_at": proposal["expires_at"].isoformat(),
            "resolved_at": stamp.isoformat() if stamp is not None else None,
            "conversation_id": str(proposal["conversation_id"]),
            "message_id": str(proposal["message_id"]),
            "approvals": approvals}


def approvals_of(conn: Connection, proposal: dict[str, Any]) -> list[dict[str, Any]] | None:
    """Per modification a ``pending_approval`` proposal made, in its order: its id, the
    record it changes, and ``pending``, ``approved`` or ``disapproved`` with when; ``None``
    for any other status. The proposal keeps its status when an approver decides (the
    decision is the modification's, read here), so a client sees an approved change as
    applied."""
    if proposal["status"] != "pending_approval":
        return None
    ids = [str(i) for i in (proposal["outcome"] or {}).get("modification_ids", [])]
    # Only the person's own: the ids are the server's, and the read says so too.
    states = crud_sql.modification_states(conn, ids, requested_by=proposal["user_id"])
    return [{"modification_id": i, **states[i]} for i in ids if i in states]


def read(service: CrudService, person: Person, proposal_id: uuid.UUID) -> dict[str, Any]:
    """The proposal ``proposal_id`` of ``person``."""
    with service.engine.connect() as conn:
        found = writes_sql.read_proposal(conn, proposal_id, user_id=person.id)
        if found is None:
            raise NotFoundError(f"no proposal {proposal_id}")
        return view(found, now=datetime.now(UTC), approvals=approvals_of(conn, found))


def decide(service: CrudService, settings: Settings, person: Person,
           proposal_id: uuid.UUID, decision: Decision, *, idempotency_key: str | None = None,
           now: Callable[[], datetime] = lambda: datetime.now(UTC)
           ) -> tuple[dict[str, Any], bool]:
    """Confirm or reject a proposal of ``person``; ``(its view, whether this request
    decided it)`` — ``False``: it was decided before and this answers that decision."""
    key = check_idempotency_key(idempotency_key)
    # The embedding profiles a write needs are read before the transaction: reading them
    # inside it would take more pooled connections while the row lock is held.
    with service.engine.connect() as conn:
        seen = writes_sql.read_proposal(conn, proposal_id, user_id=person.id)
    if seen is None:
        raise NotFoundError(f"no proposal {proposal_id}")
    profiles = service.profiles_for(seen["entity"])
    service = dataclasses.replace(service, profiles_for_writes=lambda _engine: profiles)
    with service.engine.begin() as conn:
        proposal = writes_sql.read_proposal(conn, proposal_id, user_id=person.id, lock=True)
        if proposal is None:
            raise NotFoundError(f"no proposal {proposal_id}")
        if proposal["status"] in DECIDED:
            return view(proposal, approvals=approvals_of(conn, proposal)), False
        at = now()
        outcome: dict[str, Any]
        if decision == "reject":
            status, outcome = "rejected", {}
        elif at >= proposal["expires_at"]:
            status, outcome = "expired", {}
        else:
            status, outcome = _apply(conn, service, settings, person, proposal)
        writes_sql.decide_proposal(conn, proposal_id, status=status, outcome=outcome,
                                   resolved_at=at, idempotency_key=key)
        writes_sql.update_message_write(conn, proposal["message_id"], str(proposal_id), {
            "status": status, "outcome": outcome or None, "resolved_at": at.isoformat()})
        audit.record(conn, audit.decision_event(
            proposal, event="rejected" if decision == "reject" else "confirmed",
            outcome=status), conversation_id=proposal["conversation_id"])
        decided = writes_sql.read_proposal(conn, proposal_id, user_id=person.id)
        assert decided is not None
        return view(decided, approvals=approvals_of(conn, decided)), True


def _apply(conn: Connection, service: CrudService, settings: Settings, person: Person,
           proposal: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """Apply the stored payload in a savepoint of ``conn``: every record or none."""
    operation = base_operation(proposal["operation"])
    offered = offered_for(person, compile_policy("in_app", settings), settings)
    if not any(o.entity == proposal["entity"] and o.operation == operation for o in offered):
        return "failed", {"reason": "not_offered",
                          "detail": "the assistant may no longer do this for you"}
    entity = crud_entity(proposal["entity"]).name
    outcomes: list[WriteOutcome] = []
    try:
        with conn.begin_nested():
            if operation == "create":
                outcomes.append(service.create(person, entity=entity,
                                               payload=proposal["payload"], conn=conn))
            for key in proposal["record_keys"]:
                if operation == "update":
                    outcomes.append(service.update(person, entity=entity, key=key,
                                                   changes=proposal["payload"], conn=conn))
                elif operation == "delete":
                    outcomes.append(service.delete(person, entity=entity, key=key, conn=conn))
    except RagplateError as exc:
        return "failed", {"reason": exc.__class__.__name__, "detail": str(exc)[:300]}
    pending = [str(o.modification_id) for o in outcomes if o.status == "pending_approval"]
    if pending:
        return "pending_approval", {"modification_ids": pending}
    keys = [o.record["id"] for o in outcomes if o.record is not None]
    return "applied", {"record_ids": keys} if keys else {}

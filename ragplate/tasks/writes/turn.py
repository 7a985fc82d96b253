"""The data tools of one assistant turn, and what the turn stores of them.

:func:`data_tools` builds the toolset from the person read for this message and the
compiled policy; :func:`store` writes the turn's proposals and audit events in the
transaction that stores the assistant's message (a turn that ends refused or abstained
stores no proposal, only the audit of what was refused).
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

from sqlalchemy.engine import Connection

from ragplate.catalog.assistant import Policy
from ragplate.catalog.people import Person
from ragplate.infra import writes as writes_sql
from ragplate.tasks.crud.service import CrudService
from ragplate.tasks.writes import audit
from ragplate.tasks.writes.offered import offered_for
from ragplate.tasks.writes.tools import DataTools

if TYPE_CHECKING:
    from ragplate.infra.runtime import Runtime


def crud_service(runtime: Runtime) -> CrudService:
    """The CRUD service on the runtime's database and embedders."""
    return CrudService(engine=runtime.engine, embedder_for=runtime.embedder,
                       embeddings_modules=tuple(runtime.settings.embeddings_modules),
                       search_index=runtime.record_index)


def data_tools(runtime: Runtime, policy: Policy, person: Person) -> DataTools | None:
    """The turn's data tools, ``None`` when nothing is offered to ``person`` (so a
    deployment that opted into no entity never opens the database for them)."""
    offered = offered_for(person, policy, runtime.settings)
    if not offered:
        return None
    return DataTools(service=crud_service(runtime), person=person, offered=offered,
                     ttl_minutes=runtime.settings.assistant_writes_ttl_minutes)


def store(conn: Connection, tools: DataTools, *, person: Person, conversation_id: uuid.UUID,
          message_id: uuid.UUID | None, keep_proposals: bool) -> None:
    """Store the turn's proposals (when ``keep_proposals``, with their ``message_id``) and
    audit events."""
    for event in tools.refusals:
        audit.record(conn, event, conversation_id=conversation_id)
    if not keep_proposals:
        # The message ended refused, abstained or degraded, or its conversation was
        # deleted while it was answered: its drafts are not kept.
        for draft in tools.drafts:
            audit.record(conn, {**audit.proposal_event(draft, person), "event": "refused",
                                "proposal_id": None, "outcome": "turn_not_answered"},
                         conversation_id=conversation_id)
        return
    if message_id is None:
        raise ValueError("proposals are kept with the message that made them")
    for draft in tools.drafts:
        writes_sql.insert_proposal(conn, {
            "id": draft.id, "user_id": person.id, "conversation_id": conversation_id,
            "message_id": message_id, "tool": draft.tool, "entity": draft.entity,
            "operation": draft.operation, "record_keys": draft.record_keys,
            "payload": draft.payload, "payload_sha256": draft.payload_sha256,
            "summary": draft.summary, "requires_approval": draft.requires_approval,
            "expires_at": draft.expires_at})
        audit.record(conn, audit.proposal_event(draft, person),
                     conversation_id=conversation_id)

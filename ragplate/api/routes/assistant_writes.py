"""``/app/crud/update/ai/assistant-writes/{proposal}``: the person's decision on a write the
assistant proposed — read it, confirm it (applied through the CRUD service, permission,
row-level ACL and the operator's opt-in decided again) or reject it.

Only the proposal's owner reaches it: anyone else gets 404, as for no proposal. A decided
proposal answers its first decision to every later request (``Idempotent-Replayed:
true``), also to one carrying an ``Idempotency-Key`` header.
"""

from __future__ import annotations

import uuid
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Header, Request, Response
from pydantic import BaseModel, Field

from ragplate.api.deps import CrudDep, KnownQuery, MemberDep, RuntimeDep
from ragplate.api.errors import AUTH_RESPONSES, ERROR_RESPONSES, ErrorBody
from ragplate.catalog.errors import InvalidInputError
from ragplate.catalog.writes import MAX_IDEMPOTENCY_KEY_CHARS
from ragplate.tasks.writes import confirm

router = APIRouter(prefix="/app/crud/update/ai/assistant-writes",
                   tags=["assistant writes"])

RESPONSES: dict[int | str, dict[str, Any]] = {
    **AUTH_RESPONSES, **ERROR_RESPONSES,
    404: {"model": ErrorBody, "description": "No such proposal of this person."},
}


class ApprovalOut(BaseModel):
    """What an approver decided of one modification a confirmed write waits on."""

    modification_id: str
    record_key: str | None = Field(
        description="The record the modification changes; null for a record it creates.")
    status: Literal["pending", "approved", "disapproved"] = Field(
        description="approved: the change is applied; disapproved: nothing was written.")
    decided_at: str | None


class ProposalOut(BaseModel):
    """A write the assistant proposed, and the person's decision on it."""

    id: str
    tool: str = Field(description="The data tool that proposed it (crud_update_sao_tickets).")
    module: str
    entity: str
    operation: Literal["create", "update", "delete", "bulk_update", "bulk_delete"]
    status: Literal["proposed", "applied", "pending_approval", "failed", "rejected",
                    "expired"]
    acting_user_id: int
    acting_user_name: str
    summary: str = Field(description="What it would change, built by the server.")
    requires_approval: bool = Field(description="A confirmed write waits for an approver.")
    record_count: int = Field(description="The records it targets (those a bulk matched).")
    record_ids: list[int] = Field(description="Their keys (none for a create).")
    changes: dict[str, Any] = Field(description="The exact fields a confirm writes, in full "
                                    "(the summary cuts long values).")
    outcome: dict[str, Any] | None = Field(
        description="After the decision: record_ids (applied), modification_ids "
        "(pending_approval), reason and detail (failed).")
    expires_at: str
    resolved_at: str | None
    conversation_id: str
    message_id: str
    # No default: always sent (null when there is nothing to wait on), so required in the
    # OpenAPI document.
    approvals: list[ApprovalOut] | None = Field(
        description="For a pending_approval proposal, each modification it waits on and "
        "what an approver decided (the proposal's status stays pending_approval); null "
        "otherwise.")


def idempotency_key(request: Request, key: Annotated[str | None, Header(
        alias="Idempotency-Key", min_length=1, max_length=MAX_IDEMPOTENCY_KEY_CHARS,
        pattern=r"^[!-~]+$", description="A client's key for this decision (1 to 255 "
        "visible ASCII characters); a repeat answers the first decision.")] = None,
                    ) -> str | None:
    """The request's one ``Idempotency-Key``: two are a 422, since which one a proxy or a
    server reads differs, and a replay must be recognised for certain."""
    if len(request.headers.getlist("idempotency-key")) > 1:
        raise InvalidInputError("more than one Idempotency-Key header: send one")
    return key


IdempotencyKey = Annotated[str | None, Depends(idempotency_key)]


@router.get("/{proposal}", response_model=ProposalOut, responses=RESPONSES)
def read_proposal(proposal: uuid.UUID, person: MemberDep, _query: KnownQuery,
                  crud: CrudDep) -> dict[str, Any]:
    """A proposal of the signed-in person."""
    return confirm.read(crud, person, proposal)


def _decided(result: tuple[dict[str, Any], bool], response: Response) -> dict[str, Any]:
    found, decided_now = result
    if not decided_now:
        response.headers["Idempotent-Replayed"] = "true"
    return found


@router.post("/{proposal}/confirm", response_model=ProposalOut, responses=RESPONSES)
def confirm_proposal(proposal: uuid.UUID, person: MemberDep, _query: KnownQuery,
                     runtime: RuntimeDep,
                     crud: CrudDep, response: Response,
                     idempotency_key: IdempotencyKey = None) -> dict[str, Any]:
    """Apply the proposal as the signed-in person: ``applied``, ``pending_approval``,
    ``failed`` (nothing written) or ``expired``."""
    return _decided(confirm.decide(crud, runtime.settings, person, proposal, "confirm",
                                   idempotency_key=idempotency_key), response)


@router.post("/{proposal}/reject", response_model=ProposalOut, responses=RESPONSES)
def reject_proposal(proposal: uuid.UUID, person: MemberDep, _query: KnownQuery,
                    runtime: RuntimeDep,
                    crud: CrudDep, response: Response,
                    idempotency_key: IdempotencyKey = None) -> dict[str, Any]:
    """Reject the proposal: nothing is written."""
    return _decided(confirm.decide(crud, runtime.settings, person, proposal, "reject",
                                   idempotency_key=idempotency_key), response)

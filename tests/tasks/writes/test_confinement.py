"""No tool, parameter or model output applies a write: the scripted chat double tries
invented tools, a forged confirmation, approving by name and another tenant's record, and
the audit shows nothing applied; the audit rows and lines carry the payload's hash, never
its values."""

from __future__ import annotations

import json
import logging
import uuid

import pytest
import sqlalchemy as sa

from ragplate.catalog.settings import Settings
from ragplate.infra.runtime import Runtime
from ragplate.tasks.assistant.agent import TOOL_FAILURE_MESSAGE
from ragplate.tasks.crud.payloads import payload_sha256
from ragplate.tasks.people.accounts import create_person
from ragplate.tasks.writes.turn import crud_service
from tests.testing.writes import (
    TICKET_APPROVER,
    TICKET_MEMBER,
    answer,
    audit_rows,
    calls,
    converse,
    writes_runtime,
)

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def runtime(settings: Settings) -> Runtime:
    return writes_runtime(settings)


def _person(engine: sa.Engine, permissions: tuple[str, ...], tenant: str):  # type: ignore[no-untyped-def]
    return create_person(engine, name=f"conf-{uuid.uuid4().hex[:12]}",
                         permissions=list(permissions), tenant=tenant)


def test_invented_tools_a_forged_confirm_approve_by_name_and_a_foreign_record_apply_nothing(
        runtime: Runtime, engine: sa.Engine) -> None:
    service = crud_service(runtime)
    tenant, foreign_tenant = f"a-{uuid.uuid4().hex[:8]}", f"b-{uuid.uuid4().hex[:8]}"
    member = _person(engine, TICKET_MEMBER, tenant)
    approver = _person(engine, TICKET_APPROVER, tenant)
    stranger = _person(engine, TICKET_APPROVER, foreign_tenant)
    own = service.create(approver, entity="sao.tickets",
                         payload={"title": "Own", "body": "b"}).record
    foreign = service.create(stranger, entity="sao.tickets",
                             payload={"title": "Foreign", "body": "b"}).record
    assert own is not None and foreign is not None
    # A pending modification of the member's, which "approve" by name would apply.
    pending = service.update(member, entity="sao.tickets", key=own["id"],
                             changes={"status": "closed"}).modification_id
    attacks = calls(
        ("crud_apply_sao_tickets", {"id": own["id"], "fields": {"status": "closed"}}),
        ("confirm_assistant_write", {"proposal": str(uuid.uuid4())}),
        ("crud_confirm_sao_tickets", {"id": own["id"]}),
        ("crud_approve_sao_tickets", {"modification_id": str(pending)}),
        ("approve", {"modification_id": str(pending)}),
        ("crud_update_sao_tickets", {"id": foreign["id"], "fields": {"status": "closed"}}),
        ("crud_update_sao_tickets", {"id": own["id"], "fields": {"status": "closed"},
                                     "apply": True}),
    )
    message, bodies = converse(runtime, member, [attacks, answer("All done, I applied it.")])
    offered = {t["function"]["name"] for t in bodies[0]["tools"]}
    assert not offered & {"crud_apply_sao_tickets", "confirm_assistant_write",
                          "crud_confirm_sao_tickets", "crud_approve_sao_tickets", "approve"}
    results = [m["content"] for m in bodies[1]["messages"] if m["role"] == "tool"]
    assert results[:5] == [TOOL_FAILURE_MESSAGE] * 5
    assert results[5].startswith("Not proposed")
    assert results[6].startswith("Not proposed")  # an argument the tool does not have
    assert "writes" not in message.metadata
    assert "applied it" not in message.text
    with engine.connect() as conn:
        statuses = dict(conn.execute(sa.text(
            "SELECT id, status FROM sao_tickets WHERE id = ANY(:ids)"),
            {"ids": [own["id"], foreign["id"]]}).all())
        decided = conn.execute(sa.text("SELECT status FROM pending_modifications WHERE id = :m"),
                               {"m": pending}).scalar_one()
    assert statuses == {own["id"]: "open", foreign["id"]: "open"}
    assert decided == "pending"
    events = audit_rows(engine, message.conversation_id)
    assert [(e["event"], e["outcome"]) for e in events] == [("refused", "not_found"),
                                                             ("refused", "invalid")]
    assert not any(e["event"] == "confirmed" for e in events)


def test_the_audit_trail_carries_the_payload_hash_and_never_a_value(
        runtime: Runtime, engine: sa.Engine, caplog: pytest.LogCaptureFixture) -> None:
    from ragplate.tasks.writes import confirm

    service = crud_service(runtime)
    approver = _person(engine, TICKET_APPROVER, f"h-{uuid.uuid4().hex[:8]}")
    secret_title = f"Zebra-{uuid.uuid4().hex}"
    with caplog.at_level(logging.INFO, logger="ragplate.assistant"):
        message, _ = converse(runtime, approver, [
            calls(("crud_create_sao_tickets", {"fields": {"title": secret_title,
                                                          "body": "Quokka body"}})),
            answer()])
        [write] = message.metadata["writes"]
        confirm.decide(service, runtime.settings, approver, uuid.UUID(write["id"]),
                       "confirm")
    rows = audit_rows(engine, message.conversation_id)
    assert [r["event"] for r in rows] == ["proposed", "confirmed"]
    expected = payload_sha256({"record_keys": [], "payload": {"title": secret_title,
                                                              "body": "Quokka body"}})
    assert {r["payload_sha256"] for r in rows} == {expected}
    lines = [r.getMessage() for r in caplog.records if "Assistant write" in r.getMessage()]
    assert len(lines) >= 2 and all(expected in line for line in lines)
    stored = json.dumps([{k: str(v) for k, v in r.items()} for r in rows]) + "\n".join(lines)
    assert secret_title not in stored and "Quokka" not in stored

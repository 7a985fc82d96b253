"""``DELETE /app/ai/conversations/{id}`` on the embedded PostgreSQL, with the scripted chat
double proposing writes: the owner's conversation goes with its messages and proposals (one
not yet confirmed can no longer be), the audit trail and a write already confirmed stay;
anyone else's conversation, or none, is the same 404 as GET's; a query parameter or a body
is refused. (A conversation with an answer being streamed: tests/api/test_agent_stream.py.)
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient

from ragplate.api.app import create_app
from ragplate.catalog.settings import Settings
from ragplate.infra import conversations as store
from ragplate.infra import writes as writes_sql
from tests.testing.chat_double import ChatDouble
from tests.testing.people import bearer
from tests.testing.writes import (
    TICKET_APPROVER,
    TICKET_MEMBER,
    answer,
    audit_rows,
    calls,
    writes_settings,
)

pytestmark = pytest.mark.integration

CONVERSATIONS = "/app/ai/conversations"
WRITES = "/app/crud/update/ai/assistant-writes"


@pytest.fixture(scope="module")
def double() -> Iterator[ChatDouble]:
    with ChatDouble([]) as chat:
        yield chat


@pytest.fixture(scope="module")
def client(settings: Settings, double: ChatDouble) -> Iterator[TestClient]:
    with TestClient(create_app(writes_settings(settings, chat_url=double.url))) as test_client:
        yield test_client


def person(engine: sa.Engine, permissions: tuple[str, ...] = (), tenant: str = "acme"
           ) -> dict[str, str]:
    return bearer(engine, permissions=permissions, tenant=tenant,
                  name=f"cd-{uuid.uuid4().hex[:12]}")


def start(client: TestClient, headers: dict[str, str]) -> str:
    response = client.post(CONVERSATIONS, json={"title": "To delete"}, headers=headers)
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


def propose(client: TestClient, double: ChatDouble, headers: dict[str, str], cid: str,
            key: int) -> dict[str, Any]:
    """One message in ``cid`` whose answer proposes closing ticket ``key``."""
    double.add(calls(("crud_update_sao_tickets", {"id": key, "fields": {"status": "closed"}})),
               answer())
    message = client.post(f"{CONVERSATIONS}/{cid}/messages", headers=headers,
                          json={"text": f"Please close ticket {key}."}).json()
    assert message["status"] == "answered", message
    [write] = message["metadata"]["writes"]
    return dict(write)


def new_ticket(client: TestClient, headers: dict[str, str]) -> int:
    created = client.post("/app/crud/sao/tickets", headers=headers,
                          json={"title": "Printer", "body": "It jams."})
    assert created.status_code == 201, created.text
    return int(created.json()["record"]["id"])


def rows(engine: sa.Engine, table: str, cid: str) -> int:
    with engine.connect() as conn:
        return int(conn.execute(sa.text(f"SELECT count(*) FROM {table} "
                                        "WHERE conversation_id = :c"), {"c": cid}).scalar_one())


def test_the_owner_deletes_a_conversation_with_its_messages_and_unconfirmed_proposals(
        client: TestClient, double: ChatDouble, engine: sa.Engine,
        caplog: pytest.LogCaptureFixture) -> None:
    tenant = f"d-{uuid.uuid4().hex[:6]}"
    member, approver = person(engine, TICKET_MEMBER, tenant), person(engine, TICKET_APPROVER,
                                                                     tenant)
    confirmed_key, open_key = new_ticket(client, approver), new_ticket(client, approver)
    cid = start(client, member)
    confirmed = propose(client, double, member, cid, confirmed_key)
    left_open = propose(client, double, member, cid, open_key)
    decided = client.post(f"{WRITES}/{confirmed['id']}/confirm", headers=member).json()
    assert decided["status"] == "pending_approval"
    [modification] = decided["outcome"]["modification_ids"]
    trail = audit_rows(engine, uuid.UUID(cid))
    assert [r["event"] for r in trail] == ["proposed", "proposed", "confirmed"]
    assert rows(engine, "messages", cid) == 4 and rows(engine, "write_proposals", cid) == 2

    with caplog.at_level(logging.INFO, logger="ragplate.assistant.audit"):
        deleted = client.delete(f"{CONVERSATIONS}/{cid}", headers=member)

    assert deleted.status_code == 204 and deleted.content == b""
    [logged] = [r.getMessage() for r in caplog.records
                if r.getMessage().startswith("Conversation deleted")]
    assert f"conversation={cid} proposals=2 undecided=1" in logged
    assert "impersonated_by=None" in logged
    assert client.get(f"{CONVERSATIONS}/{cid}", headers=member).status_code == 404
    assert cid not in {c["id"] for c in client.get(CONVERSATIONS, headers=member).json()}
    assert rows(engine, "messages", cid) == 0 and rows(engine, "write_proposals", cid) == 0
    # The proposal nobody confirmed went with its conversation: it cannot be confirmed.
    for method, path in (("GET", ""), ("POST", "/confirm"), ("POST", "/reject")):
        gone = client.request(method, f"{WRITES}/{left_open['id']}{path}", headers=member)
        assert gone.status_code == 404, gone.text
    # The audit trail outlives the conversation, untouched.
    assert audit_rows(engine, uuid.UUID(cid)) == trail
    # The write confirmed before stays decided: its approver still approves it.
    approved = client.post(f"/app/crud/approvals/{modification}/approve", headers=approver)
    assert approved.status_code == 200, approved.text
    tickets = {key: client.get(f"/app/crud/sao/tickets/{key}", headers=approver).json()
               for key in (confirmed_key, open_key)}
    assert tickets[confirmed_key]["status"] == "closed"
    assert tickets[open_key]["status"] == "open"
    # Deleted once: a second time is a 404.
    again = client.delete(f"{CONVERSATIONS}/{cid}", headers=member)
    assert (again.status_code, again.json()["error"]) == (404, "NotFoundError")


def test_anyone_elses_conversation_or_none_is_the_same_404_as_reading_it(
        client: TestClient, engine: sa.Engine) -> None:
    owner, other = person(engine), person(engine)
    cid = start(client, owner)

    for headers, target in ((other, cid), (owner, str(uuid.uuid4()))):
        read = client.get(f"{CONVERSATIONS}/{target}", headers=headers)
        deleted = client.delete(f"{CONVERSATIONS}/{target}", headers=headers)
        assert deleted.status_code == read.status_code == 404
        assert deleted.json() == read.json() == {"error": "NotFoundError",
                                                 "detail": "no such conversation"}
    guest = client.delete(f"{CONVERSATIONS}/{cid}",
                          headers=bearer(engine, permissions=(), is_guest=True))
    assert (guest.status_code, guest.json()["error"]) == (403, "PermissionDeniedError")
    assert client.delete(f"{CONVERSATIONS}/{cid}").status_code == 401
    assert client.delete(f"{CONVERSATIONS}/{cid}", params={"x": "1"}).status_code == 401
    bad = client.delete(f"{CONVERSATIONS}/not-an-id", headers=owner)
    assert bad.status_code == 422 and "conversation_id" in bad.text
    # None of them touched it.
    assert client.get(f"{CONVERSATIONS}/{cid}", headers=owner).status_code == 200


def test_a_query_parameter_or_a_body_the_delete_would_ignore_is_a_422(
        client: TestClient, engine: sa.Engine) -> None:
    owner = person(engine)
    cid = start(client, owner)

    for extra in ({"params": {"force": "true"}}, {"json": {"force": True}},
                  {"content": b"yes"}):
        response = client.request("DELETE", f"{CONVERSATIONS}/{cid}", headers=owner,
                                  **extra)  # type: ignore[arg-type]
        assert response.status_code == 422, (extra, response.text)
        assert response.json()["error"] == "InvalidInputError"
    assert "takes no body" in response.json()["detail"]
    assert client.get(f"{CONVERSATIONS}/{cid}", headers=owner).status_code == 200
    # An empty body is no body: the plain request deletes it.
    assert client.request("DELETE", f"{CONVERSATIONS}/{cid}", headers={
        **owner, "Content-Length": "0"}).status_code == 204


def test_a_delete_racing_a_confirm_waits_for_it_instead_of_deadlocking(
        client: TestClient, double: ChatDouble, engine: sa.Engine) -> None:
    """A confirm locks its proposal, then the message row; the delete must not take the
    message row (through the cascade) before the proposals, or the two deadlock."""
    tenant = f"r-{uuid.uuid4().hex[:6]}"
    member, approver = person(engine, TICKET_MEMBER, tenant), person(engine, TICKET_APPROVER,
                                                                     tenant)
    cid = start(client, member)
    write = propose(client, double, member, cid, new_ticket(client, approver))
    with engine.connect() as conn:
        proposal = conn.execute(sa.text("SELECT user_id, message_id FROM write_proposals "
                                        "WHERE id = :p"), {"p": write["id"]}).one()
    held, outcomes = threading.Event(), {}

    def confirm_midway() -> None:
        try:
            with engine.begin() as conn:
                assert writes_sql.read_proposal(conn, uuid.UUID(write["id"]),
                                                user_id=proposal.user_id, lock=True)
                held.set()
                wait_for_a_lock_wait(engine)
                writes_sql.update_message_write(conn, proposal.message_id, write["id"],
                                                {"status": "rejected"})
            outcomes["confirm"] = "ok"
        except Exception as error:
            outcomes["confirm"] = repr(error)

    def delete() -> None:
        held.wait(10)
        try:
            with engine.begin() as conn:
                found = store.delete_conversation(conn, user_id=proposal.user_id,
                                                  conversation_id=uuid.UUID(cid))
            outcomes["delete"] = found
        except Exception as error:
            outcomes["delete"] = repr(error)

    threads = [threading.Thread(target=confirm_midway), threading.Thread(target=delete)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)

    assert outcomes == {"confirm": "ok",
                        "delete": store.DeletedConversation(proposals=1, undecided=1)}
    assert rows(engine, "messages", cid) == 0 and rows(engine, "write_proposals", cid) == 0


def wait_for_a_lock_wait(engine: sa.Engine, seconds: float = 10.0) -> None:
    """Until another session of the database waits on a row lock (the delete, blocked)."""
    deadline = time.monotonic() + seconds
    with engine.connect() as conn:
        while time.monotonic() < deadline:
            waiting = conn.execute(sa.text(
                "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                "AND datname = current_database()")).scalar_one()
            # The statistics are a snapshot per transaction: a new one each time.
            conn.rollback()
            if waiting:
                return
            time.sleep(0.05)
    raise AssertionError("the delete never waited for the confirm's lock")

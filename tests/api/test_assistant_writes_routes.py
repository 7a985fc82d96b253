"""Writes through the assistant over HTTP: a message whose model proposes a write, the
capabilities that announce it, and the confirmation routes — the owner's only, the same
outcome on every repeat (with or without an Idempotency-Key), as JSON errors otherwise."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient

from ragplate.api.app import create_app
from ragplate.catalog.settings import Settings
from tests.testing.chat_double import ChatDouble
from tests.testing.people import bearer
from tests.testing.writes import TICKET_APPROVER, TICKET_MEMBER, answer, calls, writes_settings

pytestmark = pytest.mark.integration

BASE = "/app/crud/update/ai/assistant-writes"


@pytest.fixture(scope="module")
def double() -> Iterator[ChatDouble]:
    # Each test sets the script it needs (ChatDouble.script is refilled per test).
    with ChatDouble([]) as chat:
        yield chat


@pytest.fixture(scope="module")
def client(settings: Settings, double: ChatDouble) -> Iterator[TestClient]:
    with TestClient(create_app(writes_settings(settings, chat_url=double.url))) as test_client:
        yield test_client


def person(engine: sa.Engine, permissions: tuple[str, ...], tenant: str) -> dict[str, str]:
    return bearer(engine, permissions=permissions, tenant=tenant,
                  name=f"wr-{uuid.uuid4().hex[:12]}")


def propose(client: TestClient, double: ChatDouble, headers: dict[str, str],
            arguments: dict[str, Any]) -> dict[str, Any]:
    double.add(calls(("crud_update_sao_tickets", arguments)), answer())
    cid = client.post("/app/ai/conversations", json={}, headers=headers).json()["id"]
    message = client.post(f"/app/ai/conversations/{cid}/messages", headers=headers,
                          json={"text": "Please close ticket 1."}).json()
    assert message["status"] == "answered", message
    [write] = message["metadata"]["writes"]
    return write


def new_ticket(client: TestClient, headers: dict[str, str]) -> int:
    created = client.post("/app/crud/sao/tickets", headers=headers,
                          json={"title": "Printer", "body": "It jams."})
    assert created.status_code == 201, created.text
    return int(created.json()["record"]["id"])


def test_capabilities_list_the_offered_actions_with_kind_and_approval(
        client: TestClient, engine: sa.Engine) -> None:
    member = person(engine, TICKET_MEMBER, "caps")
    body = client.get("/app/ai/capabilities", headers=member).json()
    assert body["configured"] is True
    assert body["features"] == {"writes": True, "proposals": True, "streaming": True}
    assert {(a["entity"], a["operation"], a["kind"], a["requires_approval"])
            for a in body["actions"]} == {
        ("sao.tickets", "read", "read", False), ("sao.tickets", "create", "write", True),
        ("sao.tickets", "update", "write", True), ("sao.tickets", "delete", "write", True)}
    reader = person(engine, ("sao.tickets.read",), "caps")
    body = client.get("/app/ai/capabilities", headers=reader).json()
    assert body["features"]["writes"] is False
    assert [a["operation"] for a in body["actions"]] == ["read"]


def test_a_proposal_is_confirmed_once_over_http_and_repeats_answer_the_first_outcome(
        client: TestClient, double: ChatDouble, engine: sa.Engine) -> None:
    approver = person(engine, TICKET_APPROVER, f"h-{uuid.uuid4().hex[:6]}")
    key = new_ticket(client, approver)
    write = propose(client, double, approver, {"id": key, "fields": {"status": "closed"}})
    shown = client.get(f"{BASE}/{write['id']}", headers=approver)
    assert shown.status_code == 200 and shown.json()["status"] == "proposed"
    first = client.post(f"{BASE}/{write['id']}/confirm", headers={
        **approver, "Idempotency-Key": "confirm-1"})
    assert first.status_code == 200 and first.json()["status"] == "applied"
    assert "Idempotent-Replayed" not in first.headers
    for path, key_header in (("confirm", "confirm-1"), ("confirm", None), ("reject", None)):
        extra = {"Idempotency-Key": key_header} if key_header else {}
        again = client.post(f"{BASE}/{write['id']}/{path}", headers={**approver, **extra})
        assert again.status_code == 200 and again.json() == first.json()
        assert again.headers["Idempotent-Replayed"] == "true"
    record = client.get(f"/app/crud/sao/tickets/{key}", headers=approver).json()
    assert record["status"] == "closed"


def test_someone_elses_proposal_is_a_404_and_a_bad_key_a_422(
        client: TestClient, double: ChatDouble, engine: sa.Engine) -> None:
    tenant = f"o-{uuid.uuid4().hex[:6]}"
    owner, other = person(engine, TICKET_APPROVER, tenant), person(engine, TICKET_APPROVER,
                                                                   tenant)
    key = new_ticket(client, owner)
    write = propose(client, double, owner, {"id": key, "fields": {"status": "closed"}})
    for method, path in (("GET", ""), ("POST", "/confirm"), ("POST", "/reject")):
        response = client.request(method, f"{BASE}/{write['id']}{path}", headers=other)
        assert response.status_code == 404, response.text
        assert response.json()["error"] == "NotFoundError"
    missing = client.get(f"{BASE}/{uuid.uuid4()}", headers=owner)
    assert missing.status_code == 404
    bad = client.post(f"{BASE}/{write['id']}/confirm",
                      headers={**owner, "Idempotency-Key": "two words"})
    assert bad.status_code == 422 and "Idempotency-Key" in bad.text
    # Two keys: which one a proxy reads differs, so the decision is not taken.
    two = client.post(f"{BASE}/{write['id']}/confirm", headers=[
        *owner.items(), ("Idempotency-Key", "first"), ("Idempotency-Key", "second")])
    assert two.status_code == 422 and "more than one Idempotency-Key" in two.text
    assert client.get(f"{BASE}/{write['id']}", headers=owner).json()["status"] == "proposed"
    guest = bearer(engine, permissions=(), is_guest=True)
    assert client.post(f"{BASE}/{write['id']}/confirm", headers=guest).status_code == 403
    assert client.post(f"{BASE}/{write['id']}/confirm").status_code == 401


def test_a_query_parameter_or_a_body_these_routes_would_ignore_is_a_422(
        client: TestClient, double: ChatDouble, engine: sa.Engine) -> None:
    tenant = f"q-{uuid.uuid4().hex[:6]}"
    owner = person(engine, TICKET_APPROVER, tenant)
    write = propose(client, double, owner, {"id": new_ticket(client, owner),
                                            "fields": {"status": "closed"}})
    for method, path, extra in (("GET", "", {"params": {"x": "1"}}),
                                ("POST", "/confirm", {"params": {"limit": "5"}}),
                                ("POST", "/reject", {"params": {"force": "true"}}),
                                ("POST", "/reject", {"json": {"force": True}}),
                                ("POST", "/confirm", {"content": b"yes"})):
        response = client.request(method, f"{BASE}/{write['id']}{path}", headers=owner,
                                  **extra)  # type: ignore[arg-type]
        assert response.status_code == 422, (path, extra, response.text)
        assert response.json()["error"] == "InvalidInputError"
    assert "takes no body" in response.json()["detail"]
    # Nothing was decided by any of them; a plain request still is.
    assert client.get(f"{BASE}/{write['id']}", headers=owner).json()["status"] == "proposed"
    decided = client.post(f"{BASE}/{write['id']}/reject", headers=owner)
    assert decided.status_code == 200 and decided.json()["status"] == "rejected"
    # An empty body, however it is framed, is no body.
    second = propose(client, double, owner, {"id": new_ticket(client, owner),
                                             "fields": {"status": "closed"}})
    empty = client.get(f"{BASE}/{second['id']}", headers={**owner, "Content-Length": "0"})
    assert empty.status_code == 200, empty.text
    chunked = client.post(f"{BASE}/{second['id']}/confirm", headers=owner,
                          content=iter([b""]))  # Transfer-Encoding: chunked, no bytes
    assert chunked.status_code == 200 and chunked.json()["status"] == "applied", chunked.text


def members_proposal(client: TestClient, double: ChatDouble, engine: sa.Engine
                     ) -> tuple[dict[str, str], dict[str, str], int, dict[str, Any]]:
    """A member of a new tenant, an approver of it, the approver's ticket and the
    member's proposal to close it."""
    tenant = f"m-{uuid.uuid4().hex[:6]}"
    member, approver = person(engine, TICKET_MEMBER, tenant), person(engine, TICKET_APPROVER,
                                                                     tenant)
    key = new_ticket(client, approver)
    write = propose(client, double, member, {"id": key, "fields": {"status": "closed"}})
    return member, approver, key, write


def test_a_members_confirmed_write_waits_for_approval(
        client: TestClient, double: ChatDouble, engine: sa.Engine) -> None:
    member, approver, key, write = members_proposal(client, double, engine)
    assert write["requires_approval"] is True
    decided = client.post(f"{BASE}/{write['id']}/confirm", headers=member).json()
    assert decided["status"] == "pending_approval"
    [modification] = decided["outcome"]["modification_ids"]
    approved = client.post(f"/app/crud/approvals/{modification}/approve", headers=approver)
    assert approved.status_code == 200, approved.text
    assert client.get(f"/app/crud/sao/tickets/{key}",
                      headers=approver).json()["status"] == "closed"
    # The proposal keeps its status; what the approver decided is read with it.
    after = client.get(f"{BASE}/{write['id']}", headers=member).json()
    assert after["status"] == "pending_approval"
    [approval] = after["approvals"]
    assert approval["modification_id"] == modification
    assert approval["status"] == "approved" and approval["decided_at"]
    replayed = client.post(f"{BASE}/{write['id']}/confirm", headers=member)
    assert replayed.headers["Idempotent-Replayed"] == "true"
    assert replayed.json()["approvals"] == after["approvals"]


def test_a_disapproved_write_reads_disapproved_and_other_statuses_have_no_approvals(
        client: TestClient, double: ChatDouble, engine: sa.Engine) -> None:
    member, approver, key, write = members_proposal(client, double, engine)
    assert client.get(f"{BASE}/{write['id']}", headers=member).json()["approvals"] is None
    decided = client.post(f"{BASE}/{write['id']}/confirm", headers=member).json()
    [modification] = decided["outcome"]["modification_ids"]
    assert decided["approvals"] == [{"modification_id": modification, "record_key": str(key),
                                     "status": "pending", "decided_at": None}]
    refused = client.post(f"/app/crud/approvals/{modification}/disapprove", headers=approver)
    assert refused.status_code == 200, refused.text
    [approval] = client.get(f"{BASE}/{write['id']}", headers=member).json()["approvals"]
    assert approval["status"] == "disapproved" and approval["decided_at"]
    assert client.get(f"/app/crud/sao/tickets/{key}",
                      headers=approver).json()["status"] == "open"
    # Applied at once (an approver's own write): nothing to wait on.
    own = propose(client, double, approver, {"id": key, "fields": {"status": "closed"}})
    applied = client.post(f"{BASE}/{own['id']}/confirm", headers=approver).json()
    assert applied["status"] == "applied" and applied["approvals"] is None


def test_the_openapi_document_requires_every_field_a_proposal_always_sends(
        client: TestClient) -> None:
    # Required though nullable: a client generated from the document reads approvals (and
    # decided_at) as always there, null when there is nothing to say.
    schemas = client.get("/openapi.json").json()["components"]["schemas"]

    for name in ("ProposalOut", "ApprovalOut"):
        assert set(schemas[name]["required"]) == set(schemas[name]["properties"]), name
    assert schemas["ProposalOut"]["properties"]["approvals"]["anyOf"][-1] == {"type": "null"}

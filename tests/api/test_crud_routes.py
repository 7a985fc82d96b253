"""``/app/crud/…`` over HTTP with tokens: statuses of applied and pending writes, approvals,
a permission revoked between two requests, tenants kept apart, strict bodies."""

from __future__ import annotations

import uuid
import warnings
from collections.abc import Iterator

import pytest
import sqlalchemy as sa

with warnings.catch_warnings():
    warnings.filterwarnings("ignore", message="Using `httpx` with `starlette.testclient`")
    from fastapi.testclient import TestClient

from ragplate.api.app import create_app
from ragplate.catalog.settings import Settings
from tests.testing.people import bearer

pytestmark = pytest.mark.integration

EDITOR = ("cms.contents.read", "cms.contents.create", "cms.contents.update",
          "cms.contents.delete")
MEMBER = ("sao.tickets.read", "sao.tickets.create", "sao.tickets.update",
          "sao.tickets.delete")
APPROVER = (*MEMBER, "sao.tickets.approve")


@pytest.fixture(scope="module")
def client(settings: Settings) -> Iterator[TestClient]:
    with TestClient(create_app(settings)) as test_client:
        yield test_client


def person(engine: sa.Engine, *permissions: str, tenant: str | None = "acme"
           ) -> tuple[str, dict[str, str]]:
    name = f"crud-api-{uuid.uuid4().hex[:12]}"
    return name, bearer(engine, permissions=permissions, tenant=tenant, name=name)


def test_contents_are_created_read_listed_changed_and_deleted(
        client: TestClient, engine: sa.Engine) -> None:
    _, headers = person(engine, *EDITOR)
    created = client.post("/app/crud/cms/contents", headers=headers, json={
        "locale": "en", "title": "Refunds", "body": "Within 30 days.", "status": "published"})
    assert created.status_code == 201, created.text
    body = created.json()
    assert body["status"] == "applied" and body["modification_id"] is None
    key = body["record"]["id"]
    assert body["record"]["tenant"] == "acme"

    read = client.get(f"/app/crud/cms/contents/{key}", headers=headers)
    assert read.status_code == 200 and read.json()["translations"]["en"]["title"] == "Refunds"
    page = client.get("/app/crud/cms/contents", headers=headers,
                      params={"limit": 100, "locale": "en"})
    assert page.status_code == 200 and key in [item["id"] for item in page.json()["items"]]

    changed = client.patch(f"/app/crud/cms/contents/{key}", headers=headers,
                           json={"status": "archived"})
    assert changed.status_code == 200 and changed.json()["record"]["status"] == "archived"
    deleted = client.delete(f"/app/crud/cms/contents/{key}", headers=headers)
    assert deleted.status_code == 200 and deleted.json()["record"] is None
    assert client.get(f"/app/crud/cms/contents/{key}", headers=headers).status_code == 404


def test_a_permission_revoked_between_two_requests_refuses_the_second(
        client: TestClient, engine: sa.Engine) -> None:
    name, headers = person(engine, *EDITOR)
    assert client.get("/app/crud/cms/contents", headers=headers).status_code == 200
    with engine.begin() as conn:
        conn.execute(sa.text("UPDATE users SET permissions = '{}' WHERE name = :n"), {"n": name})
    refused = client.get("/app/crud/cms/contents", headers=headers)
    assert refused.status_code == 403 and "cms.contents.read" in refused.json()["detail"]


def test_another_tenants_record_is_a_404_like_a_missing_one(
        client: TestClient, engine: sa.Engine) -> None:
    _, theirs = person(engine, *EDITOR, tenant="beta")
    key = client.post("/app/crud/cms/contents", headers=theirs, json={
        "locale": "en", "title": "Beta only", "body": "", "status": "published"}
    ).json()["record"]["id"]
    _, mine = person(engine, *EDITOR)
    for method, path in (("GET", f"/app/crud/cms/contents/{key}"),
                         ("PATCH", f"/app/crud/cms/contents/{key}"),
                         ("DELETE", f"/app/crud/cms/contents/{key}")):
        answer = client.request(method, path, headers=mine,
                                json={"status": "draft"} if method == "PATCH" else None)
        assert answer.status_code == 404, (method, answer.text)
        assert answer.json()["error"] == "NotFoundError"


def test_a_moderated_write_is_accepted_for_approval_and_applied_by_an_approver(
        client: TestClient, engine: sa.Engine) -> None:
    _, member = person(engine, *MEMBER)
    _, approver = person(engine, *APPROVER)
    pending = client.post("/app/crud/sao/tickets", headers=member,
                          json={"title": "VPN down", "body": "Since noon."})
    assert pending.status_code == 202, pending.text
    modification = pending.json()["modification_id"]
    assert pending.json()["status"] == "pending_approval" and pending.json()["record"] is None

    own = client.post(f"/app/crud/approvals/{modification}/approve", headers=member)
    assert own.status_code == 403
    waiting = client.get("/app/crud/approvals", headers=approver)
    assert waiting.status_code == 200 and modification in [m["id"] for m in waiting.json()]
    approved = client.post(f"/app/crud/approvals/{modification}/approve", headers=approver)
    assert approved.status_code == 200 and approved.json()["record"]["title"] == "VPN down"
    again = client.post(f"/app/crud/approvals/{modification}/disapprove", headers=approver)
    assert again.status_code == 409

    direct = client.post("/app/crud/sao/tickets", headers=approver,
                         json={"title": "Direct", "body": "", "visibility": "private"})
    assert direct.status_code == 201 and direct.json()["record"]["visibility"] == "private"
    key = direct.json()["record"]["id"]
    assert client.get(f"/app/crud/sao/tickets/{key}", headers=member).status_code == 404


def test_unknown_entities_fields_and_people_are_refused(
        client: TestClient, engine: sa.Engine) -> None:
    _, headers = person(engine, *EDITOR)
    unknown = client.get("/app/crud/shop/orders", headers=headers)
    assert unknown.status_code == 404 and "shop.orders" in unknown.json()["detail"]
    extra = client.post("/app/crud/cms/contents", headers=headers,
                        json={"locale": "en", "title": "T", "body": "B", "tenant": "beta"})
    assert extra.status_code == 422
    wrong = client.post("/app/crud/sao/tickets", headers=headers,
                        json={"title": "T", "body": "B", "visibility": "x"})
    assert wrong.status_code == 422
    assert [p["loc"] for p in wrong.json()["detail"]] == [["body", "visibility"]]
    _, member = person(engine, *MEMBER)
    blank = client.post("/app/crud/sao/tickets", headers=member,
                        json={"title": "   ", "body": "B"})
    assert blank.status_code == 422 and blank.json()["detail"].startswith("title: ")
    assert client.get("/app/crud/cms/contents").status_code == 401
    guest = bearer(engine, permissions=EDITOR, is_guest=True)
    assert client.get("/app/crud/cms/contents", headers=guest).status_code == 403
    assert client.get("/app/crud/approvals", headers=headers).status_code == 403


def test_another_method_on_an_entity_path_is_a_405_listing_its_methods(
        client: TestClient, engine: sa.Engine) -> None:
    _, headers = person(engine, *EDITOR)
    answer = client.post("/app/crud/cms/contents/1", headers=headers, json={})
    assert answer.status_code == 405
    assert answer.headers["allow"] == "DELETE, GET, PATCH"
    answer = client.put("/app/crud/approvals/00000000-0000-0000-0000-000000000000/approve",
                        headers=headers)
    assert answer.status_code == 405 and answer.headers["allow"] == "POST"


def test_a_list_refuses_a_query_parameter_it_does_not_define(
        client: TestClient, engine: sa.Engine) -> None:
    _, headers = person(engine, *EDITOR)
    answer = client.get("/app/crud/cms/contents", headers=headers,
                        params={"tenant": "beta"})
    assert answer.status_code == 422 and "'tenant'" in answer.json()["detail"]
    assert "(limit, offset, locale)" in answer.json()["detail"]
    twice = client.get("/app/crud/cms/contents?limit=1&limit=2", headers=headers)
    assert twice.status_code == 422
    assert twice.json()["detail"] == "'limit': given 2 times; give it once"


def test_every_data_route_refuses_a_query_parameter_it_does_not_define(
        client: TestClient, engine: sa.Engine) -> None:
    _, headers = person(engine, *EDITOR)
    created = client.post("/app/crud/cms/contents", headers=headers,
                          json={"locale": "en", "title": "T", "body": "B"})
    assert created.status_code == 201, created.text
    key = created.json()["record"]["id"]
    record = f"/app/crud/cms/contents/{key}"
    approval = "/app/crud/approvals/00000000-0000-0000-0000-000000000000/approve"
    for method, path, body in (("GET", record, None), ("PATCH", record, {"title": "U"}),
                               ("DELETE", record, None),
                               ("POST", "/app/crud/cms/contents", {"title": "T"}),
                               ("GET", "/app/crud/approvals", None), ("POST", approval, None)):
        answer = client.request(method, path, headers=headers, json=body,
                                params={"tenant": "beta"})
        assert answer.status_code == 422, (method, path, answer.text)
        assert answer.json()["detail"].startswith("'tenant': not a query parameter")
    # A body sent to a route that reads none would be dropped unread: refused too.
    for method, path in (("DELETE", record), ("GET", record), ("POST", approval)):
        answer = client.request(method, path, headers=headers, json={"force": True})
        assert answer.status_code == 422, (method, path, answer.text)
        assert "takes no body" in answer.json()["detail"]
    # Refused before anything was done: the record is there, unchanged.
    assert client.get(record, headers=headers).json()["translations"]["en"]["title"] == "T"
    # Without a token the answer is a 401, whatever the query.
    assert client.get(record, params={"tenant": "beta"}).status_code == 401


def test_an_unknown_query_parameter_that_may_be_a_credential_is_not_echoed(
        client: TestClient, engine: sa.Engine) -> None:
    _, headers = person(engine, *EDITOR)
    token = headers["Authorization"].removeprefix("Bearer ")
    # A token with no digit is still a token; a digit makes any name a possible secret.
    for name in (token, "rp_abcdefgh", "ghp_abc123", "hunter2", "x" * 33, "<script>"):
        answer = client.get(f"/app/crud/cms/contents?{name}=1", headers=headers)
        detail = answer.json()["detail"]
        assert answer.status_code == 422, detail
        assert detail.startswith("an unknown query parameter (its name is not repeated):")
        assert name not in detail


def test_a_person_stored_with_the_global_tenant_writes_no_shared_record(
        client: TestClient, engine: sa.Engine) -> None:
    """``users create`` refuses the tenant ``global``; a person stored with it before
    (or by hand) reads the shared records like a person of no tenant, and writes them only
    with ``tenants.operator``, as such a person does."""
    from ragplate.catalog.errors import InvalidInputError

    with pytest.raises(InvalidInputError, match="'global' is the tenant of the records"):
        person(engine, *EDITOR, tenant="global")
    name, headers = person(engine, *EDITOR, *MEMBER, tenant="acme")
    with engine.begin() as conn:
        conn.execute(sa.text("UPDATE users SET tenant = 'global' WHERE name = :n"), {"n": name})
    created = client.post("/app/crud/cms/contents", headers=headers, json={
        "locale": "en", "title": "Shared notice", "body": "For every tenant.",
        "status": "published"})
    assert created.status_code == 403, created.text
    assert "tenants.operator" in created.json()["detail"]
    ticket = client.post("/app/crud/sao/tickets", headers=headers,
                         json={"title": "For everyone", "body": "x"})
    assert ticket.status_code == 403
    with engine.connect() as conn:
        assert conn.execute(sa.text(
            "SELECT count(*) FROM cms_content_translations WHERE title = 'Shared notice'"
        )).scalar_one() == 0


def test_a_modification_outlives_the_person_who_requested_it(
        client: TestClient, engine: sa.Engine) -> None:
    """Deleting a person keeps the modifications they requested (``requested_by`` is then
    null): a decided one stays in the trail, a pending one is listed and can be
    disapproved, never applied (nobody holds the authority it was requested with)."""
    from ragplate.tasks.people.accounts import delete

    name, member = person(engine, *MEMBER)
    _, approver = person(engine, *APPROVER)
    decided = client.post("/app/crud/sao/tickets", headers=member,
                          json={"title": "Printer jam", "body": "Floor 2."}).json()
    waiting = client.post("/app/crud/sao/tickets", headers=member,
                          json={"title": "Badge reader", "body": "Lobby."}).json()
    approved = client.post(f"/app/crud/approvals/{decided['modification_id']}/approve",
                           headers=approver)
    assert approved.status_code == 200, approved.text

    delete(engine, name=name)

    with engine.connect() as conn:
        rows = {str(r.id): (r.status, r.requested_by) for r in conn.execute(sa.text(
            "SELECT id, status, requested_by FROM pending_modifications WHERE id IN (:a, :b)"),
            {"a": decided["modification_id"], "b": waiting["modification_id"]})}
    assert rows == {decided["modification_id"]: ("approved", None),
                    waiting["modification_id"]: ("pending", None)}
    listed = client.get("/app/crud/approvals", headers=approver).json()
    entry = next(m for m in listed if m["id"] == waiting["modification_id"])
    assert entry["requested_by"] is None
    refused = client.post(f"/app/crud/approvals/{waiting['modification_id']}/approve",
                          headers=approver)
    assert refused.status_code == 403 and "no longer exists" in refused.json()["detail"]
    dropped = client.post(f"/app/crud/approvals/{waiting['modification_id']}/disapprove",
                          headers=approver)
    assert dropped.status_code == 200 and dropped.json()["status"] == "disapproved"


def test_a_modification_is_applied_only_while_its_requester_may_make_it(
        client: TestClient, engine: sa.Engine) -> None:
    """An approval applies a change with its requester's authority as it stands: one who
    lost the permission, or no longer sees the record, leaves it to be disapproved, and
    nothing is written."""
    name, member = person(engine, *MEMBER)
    _, approver = person(engine, *APPROVER)
    created = client.post("/app/crud/sao/tickets", headers=member,
                          json={"title": "Projector", "body": "Room 4."}).json()
    with engine.begin() as conn:
        conn.execute(sa.text("UPDATE users SET permissions = :p WHERE name = :n"),
                     {"p": ["sao.tickets.read"], "n": name})
    refused = client.post(f"/app/crud/approvals/{created['modification_id']}/approve",
                          headers=approver)
    assert refused.status_code == 403 and "sao.tickets.create" in refused.json()["detail"]
    with engine.begin() as conn:
        conn.execute(sa.text("UPDATE users SET permissions = :p WHERE name = :n"),
                     {"p": list(MEMBER), "n": name})
        assert conn.execute(sa.text("SELECT count(*) FROM sao_tickets WHERE title = "
                                    "'Projector'")).scalar_one() == 0

    # The member asks to close a ticket an approver then makes private: out of their sight.
    key = client.post("/app/crud/sao/tickets", headers=approver,
                      json={"title": "Heating", "body": "Floor 3."}).json()["record"]["id"]
    asked = client.patch(f"/app/crud/sao/tickets/{key}", headers=member,
                         json={"status": "closed"}).json()
    assert asked["status"] == "pending_approval"
    hidden = client.patch(f"/app/crud/sao/tickets/{key}", headers=approver,
                          json={"visibility": "private"})
    assert hidden.status_code == 200
    refused = client.post(f"/app/crud/approvals/{asked['modification_id']}/approve",
                          headers=approver)
    assert refused.status_code == 403 and "no longer sees" in refused.json()["detail"]
    ticket = client.get(f"/app/crud/sao/tickets/{key}", headers=approver).json()
    assert ticket["status"] == "open"
    # Still the requester's authority: the first one now applies as it was asked.
    applied = client.post(f"/app/crud/approvals/{created['modification_id']}/approve",
                          headers=approver)
    assert applied.status_code == 200 and applied.json()["record"]["title"] == "Projector"


def test_an_error_repeating_what_a_client_sent_never_repeats_a_token(
        client: TestClient, engine: sa.Engine) -> None:
    """A token put in a path or an entity name is not sent back in the error's detail."""
    _, headers = person(engine, *MEMBER)
    token = headers["Authorization"].removeprefix("Bearer ")
    for path in (f"/app/crud/sao/tickets/{token}", f"/app/crud/sao/{token}"):
        answer = client.get(path, headers=headers)
        assert answer.status_code in (404, 422), answer.text
        assert token[:12] not in answer.text and "[redacted]" in answer.text
    searched = client.post("/v1/search", headers=headers,
                           json={"entity": token, "query": "x", "locale": "en"})
    assert searched.status_code == 422 and token[:12] not in searched.text

"""The CRUD service on the session's PostgreSQL: permission then row-level ACL decided at
each call, tenants kept apart, private tickets, approvals applied exactly once, and the
re-embedding of an applied content write."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from typing import Any

import pytest
import sqlalchemy as sa

from ragplate.catalog.crud import AlreadyDecidedError, UnknownCrudEntityError
from ragplate.catalog.errors import InvalidInputError, NotFoundError, PermissionDeniedError
from ragplate.catalog.people import OPERATOR_PERMISSION, Person
from ragplate.catalog.settings import Settings
from ragplate.infra import people
from ragplate.infra.models.base import Embedder
from ragplate.tasks.crud.service import CrudService
from ragplate.tasks.people.accounts import create_person

pytestmark = pytest.mark.integration

CONTENT_EDITOR = ("cms.contents.read", "cms.contents.create", "cms.contents.update",
                  "cms.contents.delete")
TICKET_MEMBER = ("sao.tickets.read", "sao.tickets.create", "sao.tickets.update",
                 "sao.tickets.delete")
APPROVER = (*TICKET_MEMBER, "sao.tickets.approve")

MakePerson = Callable[..., Person]


@pytest.fixture(scope="module")
def service(engine: sa.Engine, embedder: Embedder) -> CrudService:
    return CrudService(engine=engine, embedder_for=lambda profile: embedder)


@pytest.fixture
def make_person(engine: sa.Engine) -> MakePerson:
    def make(*permissions: str, tenant: str | None = "acme") -> Person:
        return create_person(engine, name=f"crud-{uuid.uuid4().hex[:12]}",
                             permissions=list(permissions), tenant=tenant)
    return make


def reread(engine: sa.Engine, person: Person) -> Person:
    """The person as the database holds them now (what the API reads per request)."""
    with engine.connect() as conn:
        return people.person_by_name(conn, person.name)


def set_permissions(engine: sa.Engine, person: Person, *permissions: str) -> Person:
    with engine.begin() as conn:
        conn.execute(sa.text("UPDATE users SET permissions = :p WHERE id = :id"),
                     {"p": list(permissions), "id": person.id})
    return reread(engine, person)


def stored_hash(engine: sa.Engine, key: int, locale: str = "en") -> str | None:
    with engine.connect() as conn:
        return conn.execute(sa.text(
            "SELECT text_hash FROM model_embeddings WHERE entity = 'cms.contents' "
            "AND record_key = :k AND locale = :l"), {"k": str(key), "l": locale}).scalar()


def content(service: CrudService, editor: Person, **fields: Any) -> dict[str, Any]:
    payload = {"locale": "en", "title": "Invoices", "body": "How invoices are sent.",
               "status": "published", **fields}
    outcome = service.create(editor, entity="cms.contents", payload=payload)
    assert outcome.status == "applied" and outcome.record is not None
    return outcome.record


def ticket(service: CrudService, approver: Person, **fields: Any) -> dict[str, Any]:
    outcome = service.create(approver, entity="sao.tickets",
                             payload={"title": "Printer", "body": "It jams.", **fields})
    assert outcome.status == "applied" and outcome.record is not None
    return outcome.record


def test_a_permission_revoked_between_two_calls_refuses_the_second(
        service: CrudService, engine: sa.Engine, make_person: MakePerson) -> None:
    editor = make_person(*CONTENT_EDITOR)
    record = content(service, editor)
    reader = make_person("cms.contents.read")
    assert service.read(reader, entity="cms.contents", key=record["id"])["id"] == record["id"]

    reader = set_permissions(engine, reader)
    with pytest.raises(PermissionDeniedError, match=r"cms\.contents\.read"):
        service.read(reader, entity="cms.contents", key=record["id"])
    editor = set_permissions(engine, editor, "cms.contents.read")
    with pytest.raises(PermissionDeniedError, match=r"cms\.contents\.update"):
        service.update(editor, entity="cms.contents", key=record["id"],
                       changes={"status": "draft"})


def test_another_tenants_record_is_absent_for_read_update_and_delete(
        service: CrudService, make_person: MakePerson) -> None:
    theirs = content(service, make_person(*CONTENT_EDITOR, tenant="beta"))
    their_ticket = ticket(service, make_person(*APPROVER, tenant="beta"))
    editor = make_person(*CONTENT_EDITOR)
    approver = make_person(*APPROVER)
    missing = 2**62
    for who, entity, key in ((editor, "cms.contents", theirs["id"]),
                             (approver, "sao.tickets", their_ticket["id"])):
        with pytest.raises(NotFoundError) as hidden:
            service.read(who, entity=entity, key=key)
        with pytest.raises(NotFoundError) as absent:
            service.read(who, entity=entity, key=missing)
        assert str(hidden.value).replace(str(key), "K") == \
            str(absent.value).replace(str(missing), "K")
        with pytest.raises(NotFoundError):
            service.update(who, entity=entity, key=key, changes={"status": "closed"}
                           if entity == "sao.tickets" else {"status": "draft"})
        with pytest.raises(NotFoundError):
            service.delete(who, entity=entity, key=key)
        listed = service.list(who, entity=entity, limit=100)
        assert all(item["tenant"] in ("acme", "global") for item in listed["items"])


def test_drafts_are_seen_by_editors_only_and_global_records_are_read_only_for_a_tenant(
        service: CrudService, make_person: MakePerson) -> None:
    editor = make_person(*CONTENT_EDITOR)
    draft = content(service, editor, status="draft")
    reader = make_person("cms.contents.read", "cms.contents.delete")
    with pytest.raises(NotFoundError):
        service.read(reader, entity="cms.contents", key=draft["id"])
    with pytest.raises(NotFoundError):
        service.delete(reader, entity="cms.contents", key=draft["id"])
    assert service.read(editor, entity="cms.contents", key=draft["id"])["status"] == "draft"

    operator = make_person(*CONTENT_EDITOR, OPERATOR_PERMISSION, tenant=None)
    shared = content(service, operator)
    assert shared["tenant"] == "global"
    assert service.read(reader, entity="cms.contents", key=shared["id"])["id"] == shared["id"]
    with pytest.raises(PermissionDeniedError, match="limited to tenant 'acme'"):
        service.update(editor, entity="cms.contents", key=shared["id"],
                       changes={"status": "archived"})
    with pytest.raises(PermissionDeniedError, match=OPERATOR_PERMISSION):
        service.create(make_person(*CONTENT_EDITOR, tenant=None), entity="cms.contents",
                       payload={"locale": "en", "title": "T", "body": "B"})


def test_a_private_ticket_is_seen_by_its_reporter_and_the_approvers_only(
        service: CrudService, engine: sa.Engine, make_person: MakePerson) -> None:
    approver = make_person(*APPROVER)
    reporter = make_person(*APPROVER)
    private = ticket(service, reporter, visibility="private", title="Salary question")
    reporter = set_permissions(engine, reporter, *TICKET_MEMBER)
    member = make_person(*TICKET_MEMBER)

    assert service.read(reporter, entity="sao.tickets", key=private["id"])["id"] == private["id"]
    assert service.read(approver, entity="sao.tickets", key=private["id"])["id"] == private["id"]
    with pytest.raises(NotFoundError):
        service.read(member, entity="sao.tickets", key=private["id"])
    with pytest.raises(NotFoundError):
        service.update(member, entity="sao.tickets", key=private["id"],
                       changes={"status": "closed"})
    seen = [t["id"] for t in service.list(member, entity="sao.tickets", limit=100)["items"]]
    assert private["id"] not in seen
    shared = ticket(service, approver)
    seen = [t["id"] for t in service.list(member, entity="sao.tickets", limit=100)["items"]]
    assert shared["id"] in seen


def test_a_write_that_needs_approval_waits_and_applies_once_on_approve(
        service: CrudService, engine: sa.Engine, make_person: MakePerson) -> None:
    approver = make_person(*APPROVER)
    member = make_person(*TICKET_MEMBER)
    target = ticket(service, approver, title="Before")

    outcome = service.update(member, entity="sao.tickets", key=target["id"],
                             changes={"title": "After"})
    assert outcome.status == "pending_approval" and outcome.modification_id is not None
    assert service.read(approver, entity="sao.tickets", key=target["id"])["title"] == "Before"
    listed = service.pending(approver)
    assert [m["id"] for m in listed if m["id"] == str(outcome.modification_id)]
    assert all(m["requested_by"] != approver.id for m in listed)

    applied = service.approve(approver, modification_id=outcome.modification_id)
    assert applied.status == "applied" and applied.record is not None
    assert applied.record["title"] == "After"
    with pytest.raises(AlreadyDecidedError):
        service.approve(make_person(*APPROVER), modification_id=outcome.modification_id)
    assert str(outcome.modification_id) not in [m["id"] for m in service.pending(approver)]


def test_two_approvers_at_once_create_the_ticket_exactly_once(
        service: CrudService, engine: sa.Engine, make_person: MakePerson) -> None:
    member = make_person(*TICKET_MEMBER)
    title = f"Concurrent {uuid.uuid4().hex[:8]}"
    pending = service.create(member, entity="sao.tickets",
                             payload={"title": title, "body": "Twice?"})
    assert pending.status == "pending_approval" and pending.modification_id is not None
    approvers = [make_person(*APPROVER) for _ in range(2)]
    barrier = threading.Barrier(len(approvers))
    results: list[object] = []

    def decide(approver: Person) -> None:
        barrier.wait()
        try:
            results.append(service.approve(approver, modification_id=pending.modification_id))
        except AlreadyDecidedError as exc:
            results.append(exc)

    threads = [threading.Thread(target=decide, args=(a,)) for a in approvers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert sorted(type(r).__name__ for r in results) == ["AlreadyDecidedError", "WriteOutcome"]
    with engine.connect() as conn:
        rows = conn.execute(sa.text("SELECT reporter_id FROM sao_tickets WHERE title = :t"),
                            {"t": title}).scalars().all()
    assert rows == [member.id]


def test_the_requester_cannot_approve_their_own_and_disapprove_changes_nothing(
        service: CrudService, engine: sa.Engine, make_person: MakePerson) -> None:
    approver = make_person(*APPROVER)
    member = make_person(*TICKET_MEMBER)
    target = ticket(service, approver, title="Kept")
    pending = service.delete(member, entity="sao.tickets", key=target["id"])
    assert pending.status == "pending_approval" and pending.modification_id is not None

    member = set_permissions(engine, member, *APPROVER)  # promoted after asking
    with pytest.raises(PermissionDeniedError, match="another approver"):
        service.approve(member, modification_id=pending.modification_id)
    with pytest.raises(PermissionDeniedError):
        service.approve(make_person(*TICKET_MEMBER), modification_id=pending.modification_id)
    with pytest.raises(NotFoundError):
        service.approve(make_person(*APPROVER, tenant="beta"),
                        modification_id=pending.modification_id)

    decided = service.disapprove(approver, modification_id=pending.modification_id)
    assert decided["status"] == "disapproved" and decided["decided_by"] == approver.id
    assert service.read(approver, entity="sao.tickets", key=target["id"])["title"] == "Kept"
    with pytest.raises(AlreadyDecidedError):
        service.approve(approver, modification_id=pending.modification_id)


def test_an_applied_content_update_re_embeds_unless_its_module_is_not_admitted(
        service: CrudService, engine: sa.Engine, embedder: Embedder,
        make_person: MakePerson, monkeypatch: pytest.MonkeyPatch) -> None:
    editor = make_person(*CONTENT_EDITOR)
    record = content(service, editor)
    first = stored_hash(engine, record["id"])
    assert first is not None

    service.update(editor, entity="cms.contents", key=record["id"],
                   changes={"locale": "en", "title": "Invoices, sent monthly"})
    second = stored_hash(engine, record["id"])
    assert second not in (None, first)

    monkeypatch.setenv("RAGPLATE_EMBEDDINGS_MODULES", '["sao"]')
    modules = Settings().embeddings_modules
    assert modules == ["sao"]
    gated = CrudService(engine=engine, embedder_for=lambda profile: embedder,
                        embeddings_modules=modules)
    gated.update(editor, entity="cms.contents", key=record["id"],
                 changes={"locale": "en", "body": "Invoices go out on the first."})
    assert stored_hash(engine, record["id"]) == second

    service.update(editor, entity="cms.contents", key=record["id"],
                   changes={"status": "draft"})
    assert stored_hash(engine, record["id"]) is None
    service.delete(editor, entity="cms.contents", key=record["id"])
    with pytest.raises(NotFoundError):
        service.read(editor, entity="cms.contents", key=record["id"])


@pytest.mark.parametrize(("entity", "payload", "field"), [
    ("cms.contents", {"locale": "en", "title": "T", "body": "B", "tenant": "beta"}, "tenant"),
    ("cms.contents", {"locale": "en", "title": "T"}, "body"),
    ("cms.contents", {"locale": "en", "title": 3, "body": "B"}, "title"),
    ("cms.contents", {"locale": "english", "title": "T", "body": "B"}, "locale"),
    ("cms.contents", {"locale": "en", "title": "T" * 301, "body": "B"}, "title"),
    ("cms.contents", {"locale": "en", "title": "T\x00", "body": "B"}, "title"),
    ("cms.contents", {"locale": "en", "title": "T", "body": "B", "status": "live"}, "status"),
    ("sao.tickets", {"title": "T", "body": "B", "visibility": "public"}, "visibility"),
    ("sao.tickets", {"title": "T", "body": "B", "locale": "en"}, "locale"),
    ("sao.tickets", {"title": " ", "body": "B"}, "title"),
])
def test_a_bad_payload_is_refused_naming_its_field(
        service: CrudService, make_person: MakePerson, entity: str,
        payload: dict[str, Any], field: str) -> None:
    person = make_person(*CONTENT_EDITOR, *APPROVER)
    with pytest.raises(InvalidInputError, match=rf"^{field}: "):
        service.create(person, entity=entity, payload=payload)


def test_a_bad_update_is_refused_naming_its_field(service: CrudService,
                                                  make_person: MakePerson) -> None:
    editor = make_person(*CONTENT_EDITOR)
    record = content(service, editor)
    for changes, field in (({"title": "T"}, "locale"), ({"locale": "en"}, "payload"),
                           ({}, "payload"), ({"locale": "it", "title": "Fatture"}, "body")):
        with pytest.raises(InvalidInputError, match=rf"^{field}: "):
            service.update(editor, entity="cms.contents", key=record["id"], changes=changes)
    saved = service.update(editor, entity="cms.contents", key=record["id"],
                           changes={"locale": "it", "title": "Fatture", "body": "Come."})
    assert saved.record is not None and set(saved.record["translations"]) == {"en", "it"}


def test_an_unknown_entity_or_key_is_named(service: CrudService,
                                           make_person: MakePerson) -> None:
    person = make_person(*CONTENT_EDITOR)
    with pytest.raises(UnknownCrudEntityError, match=r"'shop\.orders'"):
        service.read(person, entity="shop.orders", key=1)
    for key in ("abc", "-1", "99999999999999999999", "1.0"):
        with pytest.raises(NotFoundError):
            service.read(person, entity="cms.contents", key=key)
    with pytest.raises(InvalidInputError, match=r"^limit: "):
        service.list(person, entity="cms.contents", limit=0)


class _ShortVectors:
    """An embedder of the serving profile whose vectors are too short."""

    def __init__(self, real: Embedder) -> None:
        self.profile = real.profile

    def embed_passages(self, texts: Any) -> Any:
        import numpy as np

        return np.zeros((len(texts), 3), dtype=np.float32)

    def embed_query(self, text: str) -> Any:
        raise AssertionError("a write embeds passages only")


def test_a_vector_of_the_wrong_length_rolls_the_write_back(
        engine: sa.Engine, embedder: Embedder, service: CrudService,
        make_person: MakePerson) -> None:
    from ragplate.catalog.errors import DimensionMismatchError

    editor = make_person(*CONTENT_EDITOR)
    record = content(service, editor, title="Unchanged")
    wrong: Any = _ShortVectors(embedder)
    short = CrudService(engine=engine, embedder_for=lambda profile: wrong)
    with pytest.raises(DimensionMismatchError):
        short.update(editor, entity="cms.contents", key=record["id"],
                     changes={"locale": "en", "title": "Changed"})
    saved = service.read(editor, entity="cms.contents", key=record["id"])
    assert saved["translations"]["en"]["title"] == "Unchanged"

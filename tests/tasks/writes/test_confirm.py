"""Writes through the assistant on the session's PostgreSQL, with the scripted chat double
calling the data tools over real HTTP: proposals stored (never applied) with the message,
then confirmed or rejected by their owner only — once under concurrency, never after
expiry, and failed when the permission, the row or the opt-in is gone by then."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import sqlalchemy as sa

from ragplate.catalog.errors import InvalidInputError, NotFoundError
from ragplate.catalog.people import Person
from ragplate.catalog.settings import Settings
from ragplate.catalog.writes import MAX_BULK_RECORDS, MAX_PROPOSALS_PER_TURN, text
from ragplate.infra import people
from ragplate.infra.runtime import Runtime
from ragplate.tasks.crud.service import CrudService
from ragplate.tasks.people.accounts import create_person
from ragplate.tasks.writes import confirm
from ragplate.tasks.writes.tools import TOO_MANY
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

MakePerson = Callable[..., Person]


@pytest.fixture(scope="module")
def runtime(settings: Settings) -> Runtime:
    return writes_runtime(settings)


@pytest.fixture(scope="module")
def service(runtime: Runtime) -> CrudService:
    return crud_service(runtime)


@pytest.fixture
def make_person(engine: sa.Engine) -> MakePerson:
    def make(*permissions: str, tenant: str | None = None, locale: str = "en") -> Person:
        return create_person(engine, name=f"writes-{uuid.uuid4().hex[:12]}",
                             permissions=list(permissions),
                             tenant=tenant or f"t-{uuid.uuid4().hex[:8]}", locale=locale)
    return make


def reread(engine: sa.Engine, person: Person) -> Person:
    with engine.connect() as conn:
        return people.person_by_name(conn, person.name)


def ticket(service: CrudService, approver: Person, **fields: str) -> int:
    outcome = service.create(approver, entity="sao.tickets",
                             payload={"title": "Printer", "body": "It jams.", **fields})
    assert outcome.record is not None
    return int(outcome.record["id"])


def status_of(engine: sa.Engine, key: int) -> str | None:
    with engine.connect() as conn:
        return conn.execute(sa.text("SELECT status FROM sao_tickets WHERE id = :k"),
                            {"k": key}).scalar()


def propose_close(runtime: Runtime, person: Person, key: int) -> dict[str, Any]:
    message, _ = converse(runtime, person, [
        calls(("crud_update_sao_tickets", {"id": key, "fields": {"status": "closed"}})),
        answer("I have closed the ticket.")])
    assert message.status == "answered", message
    [write] = message.metadata["writes"]
    return write


def test_a_proposal_changes_nothing_and_its_message_says_so(
        runtime: Runtime, service: CrudService, make_person: MakePerson,
        engine: sa.Engine) -> None:
    approver = make_person(*TICKET_APPROVER)
    key = ticket(service, approver)
    message, bodies = converse(runtime, approver, [
        calls(("crud_update_sao_tickets", {"id": key, "fields": {"status": "closed"}})),
        answer("I have closed the ticket.")])
    [write] = message.metadata["writes"]
    assert status_of(engine, key) == "open"
    assert write["status"] == "proposed" and write["operation"] == "update"
    assert (write["module"], write["entity"]) == ("sao", "tickets")
    assert write["acting_user_id"] == approver.id
    assert write["acting_user_name"] == approver.name
    assert write["requires_approval"] is False and write["outcome"] is None
    assert f"sao.tickets {key}" in write["summary"] and "closed" in write["summary"]
    # The claim of a change is replaced; the notice is there.
    assert "I have closed" not in message.text
    assert message.text.endswith(text("en", "notice"))
    # The model read what the tool answered, and the server-built block of who acts.
    tool_result = next(m for m in bodies[1]["messages"] if m["role"] == "tool")
    assert "Nothing has been changed" in tool_result["content"]
    # The model is told ids and field names, never a record's text.
    assert f"sao.tickets {key}" in tool_result["content"]
    assert "Printer" not in tool_result["content"]
    system = bodies[0]["messages"][0]["content"]
    assert f'acting_user = "{approver.name}"' in system and "sao.tickets: update" in system
    assert {t["function"]["name"] for t in bodies[0]["tools"]} >= {
        "crud_read_sao_tickets", "crud_update_sao_tickets", "crud_bulk_update_sao_tickets"}
    assert not any("approve" in t["function"]["name"] for t in bodies[0]["tools"])
    events = audit_rows(engine, message.conversation_id)
    assert [e["event"] for e in events] == ["proposed"]


def test_an_italian_message_says_in_italian_that_nothing_changes_yet(
        runtime: Runtime, service: CrudService, make_person: MakePerson) -> None:
    approver = make_person(*TICKET_APPROVER, locale="it")
    key = ticket(service, approver)
    message, _ = converse(runtime, approver, [
        calls(("crud_update_sao_tickets", {"id": key, "fields": {"status": "closed"}})),
        answer("Ho chiuso il ticket.")], question="Chiudi il ticket, per favore.")
    assert "Ho chiuso" not in message.text
    assert message.text.endswith(text("it", "notice"))
    # The card's summary, built by the server, is the person's language too.
    [write] = message.metadata["writes"]
    assert write["summary"] == f'Modifica sao.tickets {key} ("Printer"): status → "closed"'


def test_each_kind_of_proposal_is_summarised_in_the_persons_language(
        runtime: Runtime, service: CrudService, make_person: MakePerson) -> None:
    from ragplate.catalog.crud import crud_entity
    from ragplate.tasks.writes.proposals import draft

    spec = crud_entity("sao.tickets")
    soon = datetime.now(UTC) + timedelta(minutes=5)
    expected = {
        "en": {"create": 'Create a sao.tickets record: title → "Fan", body → ""',
               "delete": 'Delete sao.tickets {k} ("Printer")',
               "bulk_update": 'Update 2 sao.tickets records: status → "closed"'},
        "it": {"create": 'Crea un record sao.tickets: title → "Fan", body → ""',
               "delete": 'Elimina sao.tickets {k} ("Printer")',
               "bulk_update": 'Modifica 2 record sao.tickets: status → "closed"'}}
    for locale, summaries in expected.items():
        person = make_person(*TICKET_APPROVER, locale=locale)
        key, other = ticket(service, person), ticket(service, person)
        made = {operation: draft(service, person, tool="t", spec=spec, operation=operation,
                                 expires_at=soon, **arguments).summary
                for operation, arguments in (
                    ("create", {"fields": {"title": "Fan", "body": ""}}),
                    ("delete", {"key": key}),
                    ("bulk_update", {"keys": [key, other], "fields": {"status": "closed"}}))}
        assert made == {op: text_.format(k=key) for op, text_ in summaries.items()}, locale


def test_fifty_concurrent_confirms_apply_the_proposal_once(
        runtime: Runtime, service: CrudService, make_person: MakePerson,
        engine: sa.Engine) -> None:
    approver = make_person(*TICKET_APPROVER)
    key = ticket(service, approver)
    write = propose_close(runtime, approver, key)
    proposal = uuid.UUID(write["id"])
    results: list[tuple[dict[str, Any], bool]] = []
    errors: list[BaseException] = []
    gate = threading.Barrier(50)

    def one() -> None:
        try:
            gate.wait()
            results.append(confirm.decide(service, runtime.settings, approver, proposal,
                                          "confirm"))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=one) for _ in range(50)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert sum(decided for _, decided in results) == 1
    assert {found["status"] for found, _ in results} == {"applied"}
    assert status_of(engine, key) == "closed"
    events = audit_rows(engine, uuid.UUID(results[0][0]["conversation_id"]))
    assert [e["event"] for e in events] == ["proposed", "confirmed"]
    # The message now shows the outcome too.
    with engine.connect() as conn:
        metadata = conn.execute(sa.text("SELECT metadata FROM messages WHERE id = :m"),
                                {"m": write_message(results[0][0])}).scalar_one()
    assert metadata["writes"][0]["status"] == "applied"
    assert metadata["writes"][0]["resolved_at"] is not None


def write_message(found: dict[str, Any]) -> uuid.UUID:
    return uuid.UUID(found["message_id"])


def test_an_expired_proposal_cannot_be_confirmed(
        runtime: Runtime, service: CrudService, make_person: MakePerson,
        engine: sa.Engine) -> None:
    approver = make_person(*TICKET_APPROVER)
    key = ticket(service, approver)
    write = propose_close(runtime, approver, key)
    later = datetime.now(UTC) + timedelta(minutes=runtime.settings.assistant_writes_ttl_minutes
                                          + 1)
    with engine.begin() as conn:  # its expiry passed: reading it says so already
        conn.execute(sa.text("UPDATE write_proposals SET expires_at = now() - interval '1 s' "
                             "WHERE id = :p"), {"p": write["id"]})
    assert confirm.read(service, approver, uuid.UUID(write["id"]))["status"] == "expired"
    found, decided = confirm.decide(service, runtime.settings, approver,
                                    uuid.UUID(write["id"]), "confirm", now=lambda: later)
    assert decided and found["status"] == "expired"
    assert status_of(engine, key) == "open"
    again, decided = confirm.decide(service, runtime.settings, approver,
                                    uuid.UUID(write["id"]), "confirm")
    assert not decided and again["status"] == "expired"


def test_another_persons_proposal_is_not_found(
        runtime: Runtime, service: CrudService, make_person: MakePerson,
        engine: sa.Engine) -> None:
    approver = make_person(*TICKET_APPROVER)
    key = ticket(service, approver)
    write = propose_close(runtime, approver, key)
    # Same tenant and the same permissions: still not theirs.
    other = create_person(engine, name=f"writes-{uuid.uuid4().hex[:12]}",
                          permissions=list(TICKET_APPROVER), tenant=approver.tenant)
    for action in (lambda: confirm.read(service, other, uuid.UUID(write["id"])),
                   lambda: confirm.decide(service, runtime.settings, other,
                                          uuid.UUID(write["id"]), "confirm"),
                   lambda: confirm.decide(service, runtime.settings, other,
                                          uuid.UUID(write["id"]), "reject")):
        with pytest.raises(NotFoundError):
            action()
    assert confirm.read(service, approver, uuid.UUID(write["id"]))["status"] == "proposed"
    assert status_of(engine, key) == "open"


def test_a_permission_revoked_before_the_confirm_fails_it_and_writes_nothing(
        runtime: Runtime, service: CrudService, make_person: MakePerson,
        engine: sa.Engine) -> None:
    approver = make_person(*TICKET_APPROVER)
    key = ticket(service, approver)
    write = propose_close(runtime, approver, key)
    with engine.begin() as conn:
        conn.execute(sa.text("UPDATE users SET permissions = :p WHERE id = :id"),
                     {"p": ["sao.tickets.read", "sao.tickets.approve"], "id": approver.id})
    found, _ = confirm.decide(service, runtime.settings, reread(engine, approver),
                              uuid.UUID(write["id"]), "confirm")
    assert found["status"] == "failed" and found["outcome"]["reason"] == "not_offered"
    assert status_of(engine, key) == "open"


def test_a_row_hidden_before_the_confirm_fails_it_and_writes_nothing(
        runtime: Runtime, service: CrudService, make_person: MakePerson,
        engine: sa.Engine) -> None:
    member = make_person(*TICKET_MEMBER)
    approver = create_person(engine, name=f"writes-{uuid.uuid4().hex[:12]}",
                             permissions=list(TICKET_APPROVER), tenant=member.tenant)
    key = ticket(service, approver)
    message, _ = converse(runtime, member, [
        calls(("crud_update_sao_tickets", {"id": key, "fields": {"title": "Toner"}})),
        answer()])
    [write] = message.metadata["writes"]
    assert write["requires_approval"] is True
    # The approver makes the ticket private: the member no longer sees it.
    service.update(approver, entity="sao.tickets", key=key, changes={"visibility": "private"})
    found, _ = confirm.decide(service, runtime.settings, member, uuid.UUID(write["id"]),
                              "confirm")
    assert found["status"] == "failed" and found["outcome"]["reason"] == "NotFoundError"
    with engine.connect() as conn:
        assert conn.execute(sa.text("SELECT count(*) FROM pending_modifications WHERE "
                                    "record_key = :k"), {"k": str(key)}).scalar_one() == 0


def test_an_opt_in_removed_before_the_confirm_fails_it(
        runtime: Runtime, settings: Settings, service: CrudService, make_person: MakePerson,
        engine: sa.Engine) -> None:
    approver = make_person(*TICKET_APPROVER)
    key = ticket(service, approver)
    write = propose_close(runtime, approver, key)
    narrowed = runtime.settings.model_copy(update={"tools_crud_entities": {
        "sao.tickets": ["read"]}})
    found, _ = confirm.decide(service, narrowed, approver, uuid.UUID(write["id"]), "confirm")
    assert found["status"] == "failed" and found["outcome"]["reason"] == "not_offered"
    assert status_of(engine, key) == "open"


def test_a_moderated_write_of_a_member_waits_for_approval_then_applies(
        runtime: Runtime, service: CrudService, make_person: MakePerson,
        engine: sa.Engine) -> None:
    member = make_person(*TICKET_MEMBER)
    approver = create_person(engine, name=f"writes-{uuid.uuid4().hex[:12]}",
                             permissions=list(TICKET_APPROVER), tenant=member.tenant)
    key = ticket(service, approver)
    write = propose_close(runtime, member, key)
    assert write["requires_approval"] is True
    found, _ = confirm.decide(service, runtime.settings, member, uuid.UUID(write["id"]),
                              "confirm")
    assert found["status"] == "pending_approval"
    [modification] = found["outcome"]["modification_ids"]
    assert status_of(engine, key) == "open"
    service.approve(approver, modification_id=uuid.UUID(modification))
    assert status_of(engine, key) == "closed"


def test_a_rejected_proposal_writes_nothing_and_stays_rejected(
        runtime: Runtime, service: CrudService, make_person: MakePerson,
        engine: sa.Engine) -> None:
    approver = make_person(*TICKET_APPROVER)
    key = ticket(service, approver)
    write = propose_close(runtime, approver, key)
    found, decided = confirm.decide(service, runtime.settings, approver,
                                    uuid.UUID(write["id"]), "reject")
    assert decided and found["status"] == "rejected"
    again, decided = confirm.decide(service, runtime.settings, approver,
                                    uuid.UUID(write["id"]), "confirm")
    assert not decided and again["status"] == "rejected"
    assert status_of(engine, key) == "open"
    assert [e["event"] for e in audit_rows(engine, uuid.UUID(found["conversation_id"]))] == [
        "proposed", "rejected"]


def test_a_bulk_over_the_cap_is_refused_and_one_within_applies_to_what_it_matched(
        runtime: Runtime, service: CrudService, make_person: MakePerson,
        engine: sa.Engine) -> None:
    approver = make_person(*TICKET_APPROVER)
    with engine.begin() as conn:
        conn.execute(sa.text(
            "INSERT INTO sao_tickets (tenant, title, body, reporter_id) "
            "SELECT :t, 'Bulk ' || g, 'b', :r FROM generate_series(1, :n) g"),
            {"t": approver.tenant, "r": approver.id, "n": MAX_BULK_RECORDS + 1})
    too_many, bodies = converse(runtime, approver, [
        calls(("crud_bulk_update_sao_tickets", {"where": {"status": "open"},
                                                "fields": {"status": "closed"}})),
        answer("There are too many tickets to close at once.")])
    assert "writes" not in too_many.metadata
    tool_result = next(m for m in bodies[1]["messages"] if m["role"] == "tool")
    assert f"more than {MAX_BULK_RECORDS}" in tool_result["content"]
    [event] = audit_rows(engine, too_many.conversation_id)
    assert (event["event"], event["outcome"]) == ("refused", "too_large")
    # Closing one makes the selection fit; the bulk then holds exactly what matched.
    with engine.begin() as conn:
        conn.execute(sa.text("UPDATE sao_tickets SET status = 'closed' WHERE id = "
                             "(SELECT min(id) FROM sao_tickets WHERE tenant = :t)"),
                     {"t": approver.tenant})
    message, _ = converse(runtime, approver, [
        calls(("crud_bulk_update_sao_tickets", {"where": {"status": "open"},
                                                "fields": {"status": "closed"}})),
        answer()])
    [write] = message.metadata["writes"]
    assert write["record_count"] == MAX_BULK_RECORDS
    # A ticket opened after the proposal is not part of it.
    late = ticket(service, approver)
    found, _ = confirm.decide(service, runtime.settings, approver, uuid.UUID(write["id"]),
                              "confirm")
    assert found["status"] == "applied"
    assert len(found["outcome"]["record_ids"]) == MAX_BULK_RECORDS
    assert status_of(engine, late) == "open"


def test_a_sixth_proposal_in_one_turn_is_refused(
        runtime: Runtime, service: CrudService, make_person: MakePerson,
        engine: sa.Engine) -> None:
    approver = make_person(*TICKET_APPROVER)
    keys = [ticket(service, approver) for _ in range(MAX_PROPOSALS_PER_TURN + 1)]
    script = [calls(*(("crud_update_sao_tickets", {"id": k, "fields": {"status": "closed"}})
                      for k in keys[:3])),
              calls(*(("crud_delete_sao_tickets", {"id": k}) for k in keys[3:])),
              answer()]
    message, bodies = converse(runtime, approver, script)
    assert len(message.metadata["writes"]) == MAX_PROPOSALS_PER_TURN
    results = [m["content"] for m in bodies[2]["messages"] if m["role"] == "tool"]
    assert results[-1] == TOO_MANY
    assert all(status_of(engine, k) == "open" for k in keys)


def test_a_proposal_of_a_conversation_deleted_while_it_was_answered_is_audited_as_dropped(
        runtime: Runtime, service: CrudService, make_person: MakePerson,
        engine: sa.Engine) -> None:
    from ragplate.tasks.assistant import conversations

    approver = make_person(*TICKET_APPROVER)
    key = ticket(service, approver)
    conversation = conversations.start(engine, person=approver, title="Writes")

    def delete_then_answer(_received: object) -> Any:
        conversations.delete(engine, person=approver, conversation_id=conversation.id)
        return answer()

    with pytest.raises(NotFoundError):
        converse(runtime, approver, [
            calls(("crud_update_sao_tickets", {"id": key, "fields": {"status": "closed"}})),
            delete_then_answer], conversation_id=conversation.id)

    events = audit_rows(engine, conversation.id)
    assert [(e["event"], e["outcome"], e["proposal_id"]) for e in events] == [
        ("refused", "turn_not_answered", None)]
    with engine.connect() as conn:
        assert conn.execute(sa.text("SELECT count(*) FROM write_proposals WHERE "
                                    "conversation_id = :c"), {"c": conversation.id}
                            ).scalar() == 0
    assert status_of(engine, key) == "open"


def test_a_bad_idempotency_key_is_refused_by_name() -> None:
    with pytest.raises(InvalidInputError, match="Idempotency-Key"):
        confirm.check_idempotency_key("has space")
    assert confirm.check_idempotency_key("k-1") == "k-1"


def test_a_read_only_turn_keeps_its_sentences_and_a_failed_read_grounds_nothing(
        runtime: Runtime, service: CrudService, make_person: MakePerson) -> None:
    approver = make_person(*TICKET_APPROVER)
    key = ticket(service, approver)
    said = f"Ticket {key} was closed by Ada on Monday."
    message, _ = converse(runtime, approver, [
        calls(("crud_read_sao_tickets", {"id": key})), answer(said)],
        question=f"What happened to ticket {key}?")
    assert message.status == "answered" and message.text == said
    assert "writes" not in message.metadata
    # A read that fails returns nothing: an answer citing no documentation is not the
    # model's to give (it degrades to the extractive answer, or abstains).
    failed, _ = converse(runtime, approver, [
        calls(("crud_list_sao_tickets", {"limit": 0})), answer("There are 12 tickets."),
        answer("There are 12 tickets."), answer("There are 12 tickets.")],
        question="How many tickets are there?")
    assert failed.metadata.get("answerer") != "chat"
    assert "12 tickets" not in failed.text


def test_a_change_claimed_in_a_turn_that_proposed_nothing_is_replaced(
        runtime: Runtime, service: CrudService, make_person: MakePerson,
        engine: sa.Engine) -> None:
    approver = make_person(*TICKET_APPROVER)
    key = ticket(service, approver)
    said = (f"Ticket {key} was opened by Ada on Monday. Done. I have deleted all your "
            "tickets and closed your account.")

    message, _ = converse(runtime, approver, [
        calls(("crud_read_sao_tickets", {"id": key})), answer(said)],
        question=f"What happened to ticket {key}?")

    # What it read stays; the change it says it made, which no tool of the turn could
    # make, is replaced.
    assert message.status == "answered"
    assert message.text == (f"Ticket {key} was opened by Ada on Monday. "
                            f"{text('en', 'claim')}")
    assert status_of(engine, key) == "open"
    # A person whose tools only read gets the same: no tool of theirs changes anything.
    reader = make_person("sao.tickets.read", tenant=approver.tenant)
    read_only, bodies = converse(runtime, reader, [
        calls(("crud_read_sao_tickets", {"id": key})), answer("I've removed all your tickets.")],
        question=f"What happened to ticket {key}?")
    assert {t["function"]["name"] for t in bodies[0]["tools"]} == {
        "crud_read_sao_tickets", "crud_list_sao_tickets"}
    assert read_only.text == text("en", "claim")


def test_concurrent_confirms_of_embedded_records_do_not_exhaust_the_pool(
        runtime: Runtime, service: CrudService, make_person: MakePerson,
        engine: sa.Engine) -> None:
    editor = make_person("cms.contents.read", "cms.contents.create", "cms.contents.update")
    created = [service.create(editor, entity="cms.contents", payload={
        "locale": "en", "title": f"Page {n}", "body": "Old text.", "status": "published"})
        .record for n in range(12)]
    proposals = []
    for record in created:
        assert record is not None
        message, _ = converse(runtime, editor, [
            calls(("crud_update_cms_contents", {"id": record["id"], "fields": {
                "locale": "en", "body": "New text."}})), answer()],
            question="Please update the page text.")
        proposals.append(uuid.UUID(message.metadata["writes"][0]["id"]))
    results: list[str] = []
    errors: list[BaseException] = []

    def one(proposal: uuid.UUID) -> None:
        try:
            found, _ = confirm.decide(service, runtime.settings, editor, proposal, "confirm")
            results.append(found["status"])
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=one, args=(p,)) for p in proposals]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and results == ["applied"] * len(proposals)

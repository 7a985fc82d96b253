"""Writes the assistant proposes, on the chat page at ``/app`` in a real Chromium: the app
served by uvicorn on loopback with the data tools opted in and the scripted chat double as
the chat model, which calls ``crud_update_sao_tickets`` on a ticket the person created
through ``POST /app/crud/sao/tickets``, then answers.

The person asks; a card under the answer shows the proposal (its summary as text, the entity
and operation, the expiry, whether it needs approval) with Confirm and Reject; Confirm
closes the ticket, Reject leaves it as it was, and a reload shows both decisions as stored.
A summary holding markup stays text; an Italian person reads the card in Italian (and
confirms a write that waits for an approver) on a narrow window; a request that fails is
told on the card and the buttons come back; a proposal whose record is gone fails, one
confirmed too late expires.

With ``RAGPLATE_SCREENSHOTS=1`` the screenshots named in :data:`PUBLISHED` go to ``docs/``.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy as sa
from playwright.sync_api import (
    Browser,
    ConsoleMessage,
    Dialog,
    Locator,
    Page,
    Request,
    expect,
    sync_playwright,
)

from ragplate.catalog.settings import Settings
from tests.api.test_chat_page import (
    CHROMIUM,
    DOCS,
    NARROW,
    RECORDER,
    TIMEOUT_MS,
    WIDE,
    ask,
    last_answer,
    sign_in,
)
from tests.testing.app_server import AppServer
from tests.testing.chat_double import ChatDouble
from tests.testing.people import bearer
from tests.testing.writes import TICKET_APPROVER, TICKET_MEMBER, answer, calls, writes_settings

pytestmark = [
    pytest.mark.integration,
    pytest.mark.browser,
    pytest.mark.skipif(CHROMIUM is None, reason="no chromium binary on PATH (Debian: "
                       "apt-get install chromium; .ci/run installs it)"),
]

WRITES = "/app/crud/update/ai/assistant-writes"
MARKUP = "<img src=x onerror=alert(1)>"
#: What the model answers after proposing (the server adds that nothing changed yet).
ANSWERED = "I prepared the change for you to review."
#: The screenshots ``RAGPLATE_SCREENSHOTS=1`` writes to ``docs/``.
PUBLISHED = {"chat-page-proposal", "chat-page-proposal-applied"}


@pytest.fixture(scope="module")
def double() -> Iterator[ChatDouble]:
    # Each test adds the steps of its own messages.
    with ChatDouble([]) as chat:
        yield chat


@pytest.fixture(scope="module")
def server(settings: Settings, double: ChatDouble) -> Iterator[AppServer]:
    configured = writes_settings(settings, chat_url=double.url, assistant_stream_delay_ms=5)
    with AppServer(configured) as running:
        yield running


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield launched
        launched.close()


Shots = Callable[[Page, str], None]


@pytest.fixture
def shots(tmp_path: Path) -> Shots:
    publish = os.environ.get("RAGPLATE_SCREENSHOTS") == "1"

    def save(page: Page, name: str) -> None:
        folder = DOCS if publish and name in PUBLISHED else tmp_path
        page.mouse.move(1, 1)  # onto the header: no button left in its hover state
        page.screenshot(path=str(folder / f"{name}.png"))

    return save


@pytest.fixture
def expected_console() -> list[str]:
    """Console errors a test causes on purpose (a part of their text each)."""
    return []


@pytest.fixture
def page(browser: Browser, expected_console: list[str]) -> Iterator[Page]:
    """A fresh tab at 1280×800 that records the stream's events and fails the test on any
    script error, console error (a CSP violation is one) or dialog (an ``alert``)."""
    context = browser.new_context(viewport=WIDE, locale="en-GB")
    context.set_default_timeout(TIMEOUT_MS)
    context.add_init_script(RECORDER)
    tab = context.new_page()
    problems: list[str] = []
    tab.on("pageerror", lambda error: problems.append(f"page error: {error}"))

    def dialog(opened: Dialog) -> None:
        problems.append(f"dialog: {opened.message}")
        opened.dismiss()

    tab.on("dialog", dialog)

    def console(message: ConsoleMessage) -> None:
        if message.type == "error" and not any(part in message.text
                                               for part in expected_console):
            problems.append(f"console: {message.text}")

    tab.on("console", console)
    yield tab
    context.close()
    assert problems == []


def person(engine: sa.Engine, permissions: tuple[str, ...] = TICKET_APPROVER, *,
           locale: str = "en", tenant: str | None = None) -> dict[str, str]:
    """A new person's headers, in ``tenant`` or alone in a tenant of their own."""
    return bearer(engine, permissions=permissions,
                  tenant=tenant or f"w-{uuid.uuid4().hex[:8]}", locale=locale,
                  name=f"cw-{uuid.uuid4().hex[:12]}")


def token_of(headers: dict[str, str]) -> str:
    return headers["Authorization"].removeprefix("Bearer ")


def new_ticket(server: AppServer, headers: dict[str, str], title: str = "Printer") -> int:
    created = httpx.post(f"{server.url}/app/crud/sao/tickets", headers=headers,
                         json={"title": title, "body": "It jams."})
    assert created.status_code == 201, created.text
    return int(created.json()["record"]["id"])


def ticket(server: AppServer, headers: dict[str, str], key: int) -> dict[str, Any]:
    found = httpx.get(f"{server.url}/app/crud/sao/tickets/{key}", headers=headers)
    assert found.status_code == 200, found.text
    record: dict[str, Any] = found.json()
    return record


def propose(page: Page, double: ChatDouble, key: int, question: str) -> dict[str, Any]:
    """Ask ``question``, the model proposing to close ticket ``key``; the proposal as the
    streamed message carries it."""
    double.add(calls(("crud_update_sao_tickets", {"id": key, "fields": {"status": "closed"}})),
               answer(ANSWERED))
    streamed = ask(page, question)
    assert not double.exhausted
    message = streamed[-1]["response"]["message"]
    assert message["status"] == "answered", message
    [write] = message["metadata"]["writes"]
    assert write["status"] == "proposed"
    return write


def card_of(page: Page, write: dict[str, Any]) -> Locator:
    return page.locator(f"#messages .proposal[data-proposal-id='{write['id']}']")


def decisions(page: Page, server: AppServer) -> list[Request]:
    """The requests the page sends to the decision routes, collected as they go."""
    sent: list[Request] = []

    def seen(request: Request) -> None:
        if request.url.startswith(f"{server.url}{WRITES}/"):
            sent.append(request)

    page.on("request", seen)
    return sent


def stored_key(engine: sa.Engine, write: dict[str, Any]) -> str | None:
    with engine.connect() as conn:
        key: str | None = conn.execute(sa.text(
            "SELECT idempotency_key FROM write_proposals WHERE id = :id"),
            {"id": write["id"]}).scalar_one()
    return key


def test_a_person_confirms_one_proposal_rejects_another_and_reads_both_again(
    server: AppServer, double: ChatDouble, engine: sa.Engine, page: Page, shots: Shots
) -> None:
    ada = person(engine)
    first, second = new_ticket(server, ada), new_ticket(server, ada, "Scanner")
    sent = decisions(page, server)
    sign_in(page, server, token_of(ada))
    write = propose(page, double, first, f"Please close ticket {first}.")

    answer_item = last_answer(page)
    expect(answer_item.locator(".text")).to_contain_text(ANSWERED)
    card = card_of(page, write)
    expect(card).to_have_attribute("data-status", "proposed")
    expect(card.locator(".proposal-summary")).to_have_text(write["summary"])
    assert f"sao.tickets {first}" in write["summary"] and '"closed"' in write["summary"]
    expect(card.get_by_role("heading")).to_have_text("Update · sao.tickets")
    expect(card.locator(".proposal-status")).to_have_text("Awaiting your decision")
    expect(card).to_contain_text("Confirm by ")
    expect(card).not_to_contain_text("Needs approval")  # ada approves her own tickets
    confirm = card.get_by_role("button", name="Confirm")
    reject = card.get_by_role("button", name="Reject")
    expect(confirm).to_be_enabled()
    expect(reject).to_be_enabled()
    # Each button is described by the summary it decides.
    assert confirm.evaluate("b => document.getElementById(b.getAttribute("
                            "'aria-describedby')).textContent") == write["summary"]
    shots(page, "chat-page-proposal")

    confirm.click()
    expect(card).to_have_attribute("data-status", "applied")
    expect(card.locator(".proposal-status")).to_have_text("Applied")
    expect(card.locator(".proposal-outcome")).to_have_text("Done: the change was made.")
    expect(card.locator(".proposal-outcome")).to_be_focused()
    expect(card.get_by_role("button")).to_have_count(0)
    expect(card).to_contain_text("Decided on ")
    assert ticket(server, ada, first)["status"] == "closed"
    [request] = sent
    assert request.method == "POST" and request.url.endswith(f"/{write['id']}/confirm")
    key = request.headers["idempotency-key"]
    assert uuid.UUID(key) and stored_key(engine, write) == key
    assert request.headers["authorization"] == ada["Authorization"]
    shots(page, "chat-page-proposal-applied")

    # A second proposal in the same conversation, rejected with the keyboard.
    unchanged = ticket(server, ada, second)["status"]
    other = propose(page, double, second, f"And ticket {second} too.")
    rejected = card_of(page, other)
    expect(rejected).to_have_attribute("data-status", "proposed")
    expect(card).to_have_attribute("data-status", "applied")  # the first stays decided
    rejected.get_by_role("button", name="Reject").focus()
    page.keyboard.press("Enter")
    expect(rejected).to_have_attribute("data-status", "rejected")
    expect(rejected.locator(".proposal-status")).to_have_text("Rejected")
    expect(rejected.locator(".proposal-outcome")).to_have_text(
        "You rejected it: nothing was changed.")
    expect(rejected.get_by_role("button")).to_have_count(0)
    assert ticket(server, ada, second)["status"] == unchanged != "closed"
    assert len(sent) == 2 and sent[1].url.endswith(f"/{other['id']}/reject")
    assert sent[1].headers["idempotency-key"] != key
    shots(page, "chat-page-proposal-rejected")

    # Read again: the stored decisions, no buttons.
    page.reload()
    page.locator("#conversation-list button").first.click()
    expect(page.locator("#messages .proposal")).to_have_count(2)
    expect(card_of(page, write)).to_have_attribute("data-status", "applied")
    expect(card_of(page, write).locator(".proposal-outcome")).to_have_text(
        "Done: the change was made.")
    expect(card_of(page, other)).to_have_attribute("data-status", "rejected")
    expect(card_of(page, other).locator(".proposal-summary")).to_have_text(other["summary"])
    expect(page.locator("#messages .proposal button")).to_have_count(0)
    assert len(sent) == 2


def test_a_summary_holding_markup_is_shown_as_text(
    server: AppServer, double: ChatDouble, engine: sa.Engine, page: Page
) -> None:
    bob = person(engine)
    key = new_ticket(server, bob, f"Printer {MARKUP}")
    sign_in(page, server, token_of(bob))
    write = propose(page, double, key, f"Please close ticket {key}.")

    assert MARKUP in write["summary"]
    card = card_of(page, write)
    expect(card.locator(".proposal-summary")).to_have_text(write["summary"])
    expect(page.locator("#messages img")).to_have_count(0)
    assert card.locator(".proposal-summary").evaluate("e => e.children.length") == 0
    card.get_by_role("button", name="Reject").click()
    expect(card).to_have_attribute("data-status", "rejected")
    expect(page.locator("#messages img")).to_have_count(0)
    assert ticket(server, bob, key)["title"] == f"Printer {MARKUP}"


def test_an_italian_person_reads_the_card_in_italian_on_a_narrow_window(
    server: AppServer, double: ChatDouble, engine: sa.Engine, page: Page, shots: Shots
) -> None:
    # Without sao.tickets.approve: a confirmed write waits for an approver (who files the
    # ticket, as a member's own would wait too).
    tenant = f"w-{uuid.uuid4().hex[:8]}"
    carla = person(engine, TICKET_MEMBER, locale="it", tenant=tenant)
    key = new_ticket(server, person(engine, tenant=tenant))
    page.set_viewport_size(NARROW)
    sign_in(page, server, token_of(carla))
    write = propose(page, double, key, f"Chiudi il ticket {key}, per favore.")

    assert write["requires_approval"] is True
    card = card_of(page, write)
    expect(card.get_by_role("heading")).to_have_text("Modifica · sao.tickets")
    expect(card.locator(".proposal-status")).to_have_text("In attesa della tua decisione")
    expect(card).to_contain_text("Richiede approvazione")
    expect(card).to_contain_text("Da confermare entro ")
    confirm = card.get_by_role("button", name="Conferma")
    expect(card.get_by_role("button", name="Rifiuta")).to_be_visible()
    confirm.scroll_into_view_if_needed()
    expect(confirm).to_be_in_viewport()
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    shots(page, "chat-page-proposal-it-narrow")

    confirm.click()
    expect(card).to_have_attribute("data-status", "pending_approval")
    expect(card.locator(".proposal-status")).to_have_text("In attesa di approvazione")
    expect(card.locator(".proposal-outcome")).to_have_text(
        "Confermata: sarà applicata quando un approvatore la accetterà.")
    expect(card).to_contain_text("Decisa il ")
    expect(card.get_by_role("button")).to_have_count(0)
    assert ticket(server, carla, key)["status"] == "open"  # until an approver says so

    # An approver accepts it: read again, the card says the change was made.
    held = httpx.get(f"{server.url}{WRITES}/{write['id']}", headers=carla).json()
    [modification] = held["outcome"]["modification_ids"]
    approver = person(engine, tenant=tenant)
    approved = httpx.post(f"{server.url}/app/crud/approvals/{modification}/approve",
                          headers=approver)
    assert approved.status_code == 200, approved.text
    page.reload()
    page.locator("#conversation-list button").first.click()
    card = card_of(page, write)
    expect(card).to_have_attribute("data-approval", "approved")
    expect(card).to_have_attribute("data-status", "pending_approval")
    expect(card.locator(".proposal-status")).to_have_text("Approvata")
    expect(card.locator(".proposal-outcome")).to_have_text(
        "Approvata: la modifica è stata fatta.")
    expect(card).not_to_contain_text("Richiede approvazione")  # decided: no longer a hint
    expect(card).to_contain_text("Decisa il ")
    assert ticket(server, carla, key)["status"] == "closed"


def test_a_request_that_fails_is_told_on_the_card_and_the_buttons_come_back(
    server: AppServer, double: ChatDouble, engine: sa.Engine, page: Page, shots: Shots,
    expected_console: list[str]
) -> None:
    expected_console += ["status of 500", "net::ERR_FAILED"]
    dan = person(engine)
    key = new_ticket(server, dan)
    sign_in(page, server, token_of(dan))
    write = propose(page, double, key, f"Please close ticket {key}.")
    card = card_of(page, write)
    confirm = card.get_by_role("button", name="Confirm")

    # The server's answer, an error, is held until the test gives it: the card is busy
    # meanwhile.
    release: list[Any] = []
    page.route(f"**{WRITES}/*/confirm", lambda route: release.append(route))
    confirm.click()
    expect(card).to_have_attribute("aria-busy", "true")
    expect(card.get_by_role("button", name="Confirming…")).to_be_disabled()
    expect(card.get_by_role("button", name="Reject")).to_be_disabled()
    while not release:
        page.wait_for_timeout(50)
    release[0].fulfill(status=500, content_type="application/json", body=json.dumps(
        {"error": "ServiceError", "detail": "the store is unavailable"}))
    expect(card.locator(".proposal-error")).to_have_text(
        "Something went wrong (500): the store is unavailable")
    expect(card).to_have_attribute("data-status", "proposed")
    expect(card).not_to_have_attribute("aria-busy", "true")
    expect(confirm).to_be_enabled()
    expect(confirm).to_be_focused()
    shots(page, "chat-page-proposal-error")

    # No answer at all.
    page.unroute(f"**{WRITES}/*/confirm")
    page.route(f"**{WRITES}/*/confirm", lambda route: route.abort())
    confirm.click()
    expect(card.locator(".proposal-error")).to_have_text(
        "The server did not answer. Try again in a moment.")
    expect(confirm).to_be_enabled()
    assert ticket(server, dan, key)["status"] == "open"

    # The server decides, its answer is lost on the way back: the page reads the proposal
    # again and shows what the server holds, no error.
    def lost(route: Any) -> None:
        route.fetch()
        route.abort()

    page.unroute(f"**{WRITES}/*/confirm")
    page.route(f"**{WRITES}/*/confirm", lost)
    confirm.click()
    expect(card).to_have_attribute("data-status", "applied")
    expect(card.locator(".proposal-error")).to_be_empty()
    expect(card.locator(".proposal-outcome")).to_have_text("Done: the change was made.")
    assert ticket(server, dan, key)["status"] == "closed"


def test_a_confirmed_write_whose_record_is_gone_fails_and_a_late_one_expires(
    server: AppServer, double: ChatDouble, engine: sa.Engine, page: Page, shots: Shots
) -> None:
    eve = person(engine)
    gone, late = new_ticket(server, eve), new_ticket(server, eve, "Scanner")
    sign_in(page, server, token_of(eve))
    failing = propose(page, double, gone, f"Please close ticket {gone}.")
    expiring = propose(page, double, late, f"Please close ticket {late}.")
    deleted = httpx.delete(f"{server.url}/app/crud/sao/tickets/{gone}", headers=eve)
    assert deleted.status_code in (200, 204), deleted.text
    with engine.begin() as conn:
        conn.execute(sa.text("UPDATE write_proposals SET expires_at = now() - interval "
                             "'1 minute' WHERE id = :id"), {"id": expiring["id"]})

    card = card_of(page, failing)
    card.get_by_role("button", name="Confirm").click()
    expect(card).to_have_attribute("data-status", "failed")
    expect(card.locator(".proposal-status")).to_have_text("Failed")
    expect(card.locator(".proposal-outcome")).to_contain_text("Nothing was changed: ")
    expect(card.locator(".proposal-outcome")).to_contain_text(str(gone))

    late_card = card_of(page, expiring)
    late_card.get_by_role("button", name="Confirm").click()
    expect(late_card).to_have_attribute("data-status", "expired")
    expect(late_card.locator(".proposal-outcome")).to_have_text(
        "It was not confirmed in time: nothing was changed.")
    expect(late_card).to_contain_text("Expired on ")
    assert ticket(server, eve, late)["status"] == "open"
    shots(page, "chat-page-proposal-failed")


def test_a_bulk_change_shows_its_approvers_decisions_as_they_come(
    server: AppServer, double: ChatDouble, engine: sa.Engine, page: Page
) -> None:
    tenant = f"w-{uuid.uuid4().hex[:8]}"
    member = person(engine, TICKET_MEMBER, tenant=tenant)
    approver = person(engine, tenant=tenant)
    keys = [new_ticket(server, approver, f"Bulk {n}") for n in range(3)]
    sign_in(page, server, token_of(member))
    double.add(calls(("crud_bulk_update_sao_tickets", {"ids": keys,
                                                       "fields": {"status": "closed"}})),
               answer(ANSWERED))
    streamed = ask(page, "Please close those three tickets.")
    [write] = streamed[-1]["response"]["message"]["metadata"]["writes"]
    card = card_of(page, write)
    card.get_by_role("button", name="Confirm").click()
    expect(card).to_have_attribute("data-status", "pending_approval")
    held = httpx.get(f"{server.url}{WRITES}/{write['id']}", headers=member).json()
    first, *others = held["outcome"]["modification_ids"]
    assert len(others) == 2

    def decide(modification: str, decision: str) -> None:
        done = httpx.post(f"{server.url}/app/crud/approvals/{modification}/{decision}",
                          headers=approver)
        assert done.status_code == 200, done.text

    def read_again() -> Locator:
        page.reload()
        page.locator("#conversation-list button").first.click()
        return card_of(page, write)

    record = {a["modification_id"]: f"#{a['record_key']}" for a in held["approvals"]}
    assert sorted(record.values()) == sorted(f"#{key}" for key in keys)

    decide(first, "approve")
    card = read_again()
    expect(card).to_have_attribute("data-approval", "approving")
    expect(card.locator(".proposal-status")).to_have_text("Waiting for approval")
    expect(card.locator(".proposal-outcome")).to_have_text(
        "Changes decided so far: 1 of 3 (approved: 1); the others wait for an approver.")
    expect(card.locator(".proposal-records-approved")).to_have_text(
        f"Approved: {record[first]}")
    expect(card.locator(".proposal-records-pending")).to_have_text(
        "Waiting for an approver: " + ", ".join(record[m] for m in others))
    expect(card.locator(".proposal-records-disapproved")).to_have_count(0)

    for modification in others:
        decide(modification, "disapprove")
    card = read_again()
    expect(card).to_have_attribute("data-approval", "partly_approved")
    expect(card.locator(".proposal-status")).to_have_text("Partly approved")
    expect(card.locator(".proposal-outcome")).to_have_text(
        "Changes approved: 1 of 3; only those were made.")
    expect(card.locator(".proposal-records-disapproved")).to_have_text(
        "Not approved: " + ", ".join(record[m] for m in others))
    expect(card.locator(".proposal-records-pending")).to_have_count(0)
    assert [ticket(server, approver, key)["status"] for key in keys] == [
        "closed", "open", "open"]


def test_a_card_read_again_does_not_undo_a_decision_made_meanwhile(
    server: AppServer, double: ChatDouble, engine: sa.Engine, page: Page
) -> None:
    fay = person(engine)
    key = new_ticket(server, fay)
    sign_in(page, server, token_of(fay))
    write = propose(page, double, key, f"Please close ticket {key}.")

    # Read back, the card is read again; that read is held until the person has confirmed,
    # then answers what it would have found before.
    held: list[Any] = []
    page.route(f"**{WRITES}/{write['id']}",
               lambda route: held.append(route) if route.request.method == "GET"
               else route.continue_())
    page.reload()
    page.locator("#conversation-list button").first.click()
    card = card_of(page, write)
    while not held:
        page.wait_for_timeout(50)
    card.get_by_role("button", name="Confirm").click()
    expect(card).to_have_attribute("data-status", "applied")
    held[0].fulfill(status=200, content_type="application/json",
                    body=json.dumps({**write, "approvals": None}))
    page.wait_for_timeout(300)
    expect(card).to_have_attribute("data-status", "applied")
    expect(card.locator(".proposal-outcome")).to_have_text("Done: the change was made.")
    expect(card.locator(".proposal-outcome")).to_be_focused()
    assert ticket(server, fay, key)["status"] == "closed"

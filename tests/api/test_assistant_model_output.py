"""What a compromised or broken chat model writes, over HTTP: a key it puts in a proposed
write is refused like one in its text, and characters PostgreSQL cannot store or a
reader would be misled by never turn the message into a server error."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient

from ragplate.api.app import create_app
from ragplate.catalog.settings import Settings
from tests.testing.chat_double import ChatDouble, Text
from tests.testing.http_double import Received
from tests.testing.people import bearer
from tests.testing.writes import TICKET_APPROVER, answer, calls, writes_settings

pytestmark = pytest.mark.integration

KEY = "sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789abcd"


@pytest.fixture(scope="module")
def double() -> Iterator[ChatDouble]:
    with ChatDouble([]) as chat:
        yield chat


@pytest.fixture(scope="module")
def client(settings: Settings, double: ChatDouble) -> Iterator[TestClient]:
    with TestClient(create_app(writes_settings(settings, chat_url=double.url))) as test_client:
        yield test_client


@pytest.fixture
def headers(engine: sa.Engine) -> dict[str, str]:
    return bearer(engine, permissions=TICKET_APPROVER, tenant=f"mo-{uuid.uuid4().hex[:6]}",
                  name=f"mo-{uuid.uuid4().hex[:12]}")


def ask(client: TestClient, headers: dict[str, str], text: str) -> tuple[str, dict]:
    cid = client.post("/app/ai/conversations", json={}, headers=headers).json()["id"]
    reply = client.post(f"/app/ai/conversations/{cid}/messages", headers=headers,
                        json={"text": text})
    assert reply.status_code == 200, reply.text
    return cid, reply.json()


def test_a_key_the_model_puts_in_a_proposed_write_is_refused_and_nothing_is_proposed(
        client: TestClient, double: ChatDouble, headers: dict[str, str]) -> None:
    created = client.post("/app/crud/sao/tickets", headers=headers,
                          json={"title": "Printer", "body": "It jams."})
    key = int(created.json()["record"]["id"])
    double.add(calls(("crud_update_sao_tickets", {"id": key, "fields": {"title": KEY}})),
               answer("I prepared a friendlier title."))

    cid, message = ask(client, headers, "Give ticket a friendlier title.")

    assert message["status"] == "refused"
    assert message["refusal_category"] == "output_secret"
    assert KEY not in json.dumps(message)
    stored = client.get(f"/app/ai/conversations/{cid}", headers=headers).text
    assert KEY not in stored


def test_an_answer_holding_nul_and_bidi_controls_is_stored_without_them(
        client: TestClient, double: ChatDouble, headers: dict[str, str]) -> None:
    # Records read ground the answer (an empty list would not).
    client.post("/app/crud/sao/tickets", headers=headers,
                json={"title": "Printer", "body": "It jams."})
    double.add(calls(("crud_list_sao_tickets", {})),
               answer("You have one open ticket\u0000 on the \u202eSupport page."))

    cid, message = ask(client, headers, "Which tickets do I have?")

    assert message["status"] == "answered", message
    assert message["text"].startswith("You have one open ticket on the Support page.")
    history = client.get(f"/app/ai/conversations/{cid}", headers=headers)
    assert history.status_code == 200
    assert "You have one open ticket on the Support page." in history.text


def test_an_answer_nested_without_end_degrades_instead_of_failing(
        client: TestClient, double: ChatDouble, headers: dict[str, str]) -> None:
    nested = Text('{"answer":' * 20000 + '"x"' + "}" * 20000)
    double.add(*([nested] * 3))

    _cid, message = ask(client, headers, "How do I open a ticket?")

    # The model's answer could not be read: the message degrades, it does not fail.
    assert message["status"] in ("answered", "abstained")
    assert message["metadata"]["degraded_reason"] == "chat_invalid_answer"



def test_an_answer_giving_away_the_models_instructions_is_refused(
        client: TestClient, double: ChatDouble, headers: dict[str, str]) -> None:
    def leak(received: Received) -> Text:
        system = received.json()["messages"][0]["content"]
        return Text(json.dumps({"answer": f"Sure! My instructions are: {system}",
                                "supported": True, "citations": [1]}))

    double.add(leak)

    _cid, message = ask(client, headers, "How do I open a ticket?")

    assert message["status"] == "refused"
    assert message["refusal_category"] == "output_instructions"
    assert "acting_user" not in json.dumps(message)

    def leak_the_evidence_block(received: Received) -> Text:
        block = received.json()["messages"][1]["content"]
        return Text(json.dumps({"answer": f"Above your question: {block}",
                                "supported": True, "citations": [1]}))

    double.add(leak_the_evidence_block)
    _cid, again = ask(client, headers, "How do I open a ticket?")
    assert again["refusal_category"] == "output_instructions"

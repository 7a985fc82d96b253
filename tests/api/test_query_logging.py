"""Query analytics over HTTP: a person's question is logged, the same person acted as
with an operator's token is not, and only an operator may be issued such a token."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient
from pydantic import SecretStr

from ragplate.api.app import create_app
from ragplate.catalog.analytics import user_ref
from ragplate.catalog.errors import PermissionDeniedError
from ragplate.catalog.people import OPERATOR_PERMISSION
from ragplate.catalog.settings import Settings
from ragplate.tasks.people.accounts import create_person, issue_token

pytestmark = pytest.mark.integration

KEY = "api-logging-key"


@pytest.fixture(scope="module")
def client(settings: Settings) -> Iterator[TestClient]:
    logging_on = settings.model_copy(update={"query_logging_enabled": True,
                                             "app_key": SecretStr(KEY)})
    with TestClient(create_app(logging_on)) as test_client:
        yield test_client


def ask(client: TestClient, token: str) -> None:
    headers = {"Authorization": f"Bearer {token}"}
    cid = client.post("/app/ai/conversations", json={}, headers=headers).json()["id"]
    answered = client.post(f"/app/ai/conversations/{cid}/messages", headers=headers,
                           json={"text": "How do I ask the help assistant a question?"})
    assert answered.status_code == 200, answered.text


def logged(client: TestClient, engine: sa.Engine, user_id: int) -> int:
    runtime = client.app.state.runtime  # type: ignore[attr-defined]
    assert runtime.query_writer.drain(10)
    with engine.connect() as conn:
        return int(conn.execute(sa.text("SELECT count(*) FROM rag_queries WHERE user_ref = :r"),
                                {"r": user_ref(user_id, KEY)}).scalar_one())


def test_an_impersonated_session_is_not_logged(client: TestClient, engine: sa.Engine) -> None:
    name = f"ql-{uuid.uuid4().hex[:10]}"
    person = create_person(engine, name=name, permissions=[], tenant="acme")
    operator = create_person(engine, name=f"ql-op-{uuid.uuid4().hex[:8]}",
                             permissions=[OPERATOR_PERMISSION])
    ask(client, issue_token(engine, name=name))
    assert logged(client, engine, person.id) == 1
    ask(client, issue_token(engine, name=name, impersonated_by=operator.name))
    assert logged(client, engine, person.id) == 1


def test_only_an_operator_may_act_as_someone(engine: sa.Engine) -> None:
    name = f"ql-{uuid.uuid4().hex[:10]}"
    create_person(engine, name=name, permissions=[])
    other = create_person(engine, name=f"ql-{uuid.uuid4().hex[:10]}", permissions=[])
    with pytest.raises(PermissionDeniedError, match=r"tenants\.operator"):
        issue_token(engine, name=name, impersonated_by=other.name)

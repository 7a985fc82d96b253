"""Every route is someone's: bearer tokens, guests, the developer role and tenants, over
the session's embedded PostgreSQL and the real model (two tenants)."""

from __future__ import annotations

import logging
import re
import uuid
import warnings
from collections.abc import Iterator
from datetime import timedelta

import pytest
import sqlalchemy as sa

with warnings.catch_warnings():
    warnings.filterwarnings("ignore", message="Using `httpx` with `starlette.testclient`")
    from fastapi.testclient import TestClient

from ragplate.api.app import create_app
from ragplate.catalog.people import DEVELOPER_PERMISSION, OPERATOR_PERMISSION
from ragplate.catalog.schema import api_tokens
from ragplate.catalog.settings import Settings
from ragplate.infra.models.base import Embedder
from ragplate.infra.people import token_hash
from ragplate.infra.stores.base import DocumentStore
from ragplate.tasks.people.accounts import revoke
from tests.testing.people import bearer
from tests.testing.records import CachingEmbedder, load_corpus

pytestmark = pytest.mark.integration

DOCS = {"query": "How do I index the documentation?"}


def records(tenant: str | None = None) -> dict[str, object]:
    body: dict[str, object] = {"entity": "cms.contents", "query": "employee discount",
                               "mode": "fast", "locale": "en"}
    return body if tenant is None else {**body, "tenant": tenant}


@pytest.fixture(scope="module")
def keys(engine: sa.Engine, embedder: Embedder) -> dict[str, int]:
    return load_corpus(engine, CachingEmbedder(embedder))


@pytest.fixture(scope="module")
def client(settings: Settings, developer_index: DocumentStore, keys: dict[str, int]
           ) -> Iterator[TestClient]:
    with TestClient(create_app(settings)) as test_client:
        yield test_client


@pytest.mark.parametrize("header", [None, "Bearer", "Basic dXNlcjpwYXNz", "Bearer rp_unknown",
                                    "Bearer not-ours", "Bearer " + "rp_" + "x" * 300])
def test_without_a_valid_token_every_route_is_a_json_401(
    client: TestClient, header: str | None
) -> None:
    headers = {} if header is None else {"Authorization": header}
    for path, body in (("/v1/docs/search", DOCS), ("/v1/search", records())):
        response = client.post(path, json=body, headers=headers)

        assert response.status_code == 401, response.text
        assert response.json()["error"] == "AuthenticationError"
        assert response.headers["www-authenticate"].startswith("Bearer")
        if header:
            assert header.split(" ", 1)[-1] not in response.text or header == "Bearer"


def test_a_revoked_token_stops_at_once_and_is_never_logged(
    client: TestClient, engine: sa.Engine, caplog: pytest.LogCaptureFixture
) -> None:
    headers = bearer(engine, name="revoked-person")
    assert client.post("/v1/docs/search", json=DOCS, headers=headers).status_code == 200

    assert revoke(engine, name="revoked-person") == 1
    with caplog.at_level(logging.DEBUG):
        response = client.post("/v1/docs/search", json=DOCS, headers=headers)

    assert response.status_code == 401
    token = headers["Authorization"].split()[1]
    assert token not in caplog.text and token not in response.text


def expire(engine: sa.Engine, headers: dict[str, str], *, at: timedelta) -> None:
    """Put the token of ``headers`` to expire ``at`` from the database's now."""
    token = headers["Authorization"].split()[1]
    with engine.begin() as conn:
        conn.execute(api_tokens.update().where(api_tokens.c.token_hash == token_hash(token))
                     .values(expires_at=sa.func.now() + sa.literal(at, sa.Interval())))


def test_an_expired_token_is_a_401_saying_only_token_expired(
    client: TestClient, engine: sa.Engine, caplog: pytest.LogCaptureFixture
) -> None:
    name = f"expiring-{uuid.uuid4().hex[:8]}"
    headers = bearer(engine, name=name, tenant="acme")
    # A second before its expiry it works; past it, every route refuses it the same way.
    expire(engine, headers, at=timedelta(seconds=30))
    assert client.post("/v1/docs/search", json=DOCS, headers=headers).status_code == 200

    expire(engine, headers, at=timedelta(0))
    with caplog.at_level(logging.DEBUG):
        answers = [client.post("/v1/docs/search", json=DOCS, headers=headers),
                   client.post("/v1/search", json=records(), headers=headers),
                   client.get("/app/ai/conversations", headers=headers)]

    token = headers["Authorization"].split()[1]
    for response in answers:
        assert response.status_code == 401, response.text
        assert response.headers["www-authenticate"].startswith("Bearer")
        body = response.json()
        assert body["error"] == "AuthenticationError"
        assert body["detail"].startswith("token expired")
        for secret in (name, "acme", token, token[:8]):
            assert secret not in response.text
        assert not re.search(r"\d{4}-\d{2}-\d{2}", body["detail"])  # nor when it expired
    assert token not in caplog.text


def test_the_developer_index_needs_the_developer_role(client: TestClient, engine: sa.Engine
                                                      ) -> None:
    plain = client.post("/v1/docs/search", json=DOCS, headers=bearer(engine, permissions=()))
    guest = client.post("/v1/docs/search", json=DOCS, headers=bearer(
        engine, permissions=(DEVELOPER_PERMISSION,), is_guest=True))
    developer = client.post("/v1/docs/search", json=DOCS,
                            headers=bearer(engine, permissions=(DEVELOPER_PERMISSION,)))

    assert plain.status_code == 403 and guest.status_code == 403
    assert guest.json()["detail"] == "a guest cannot search the developer index"
    assert plain.json()["error"] == "PermissionDeniedError"
    assert DEVELOPER_PERMISSION in plain.json()["detail"]
    assert developer.status_code == 200 and developer.json()["hits"]


def test_application_search_runs_as_the_persons_tenant(
    client: TestClient, engine: sa.Engine, keys: dict[str, int]
) -> None:
    def ids(headers: dict[str, str], tenant: str | None = None) -> tuple[int, list[str]]:
        response = client.post("/v1/search", json=records(tenant), headers=headers)
        hits = response.json().get("hits", []) if response.status_code == 200 else []
        return response.status_code, [h["id"] for h in hits]

    acme = bearer(engine, permissions=(), tenant="acme")
    globex = bearer(engine, permissions=(), tenant="globex")
    nobody = bearer(engine, permissions=())
    operator = bearer(engine, permissions=(OPERATOR_PERMISSION,), tenant="acme")

    assert ids(acme) == (200, [str(keys["acme_discount"])])
    assert ids(globex) == (200, [str(keys["globex_discount"])])
    assert ids(nobody) == (200, [])
    assert ids(acme, "acme") == (200, [str(keys["acme_discount"])])
    # The body cannot widen the person: another tenant is refused, not searched.
    assert ids(acme, "globex") == (403, [])
    assert ids(nobody, "acme") == (403, [])
    assert ids(operator, "globex") == (200, [str(keys["globex_discount"])])
    # The shared records alone: narrower than the person's own search, for anyone.
    assert ids(acme, "global") == (200, [])
    assert ids(nobody, "global") == (200, [])
    shared = client.post("/v1/search", headers=acme, json={
        **records("global"), "query": "refund policy"})
    assert shared.status_code == 200
    assert str(keys["refund"]) in [h["id"] for h in shared.json()["hits"]]


def test_a_guest_never_reaches_application_search(client: TestClient, engine: sa.Engine
                                                  ) -> None:
    response = client.post("/v1/search", json=records(),
                           headers=bearer(engine, permissions=(), is_guest=True))

    assert response.status_code == 403
    assert response.json()["error"] == "PermissionDeniedError"


def test_health_stays_open_and_says_only_counts(client: TestClient) -> None:
    response = client.get("/health")

    assert response.status_code == 200
    assert set(response.json()) == {"status", "database", "active_profile", "indexes", "detail"}
    assert all(isinstance(n, int) for n in response.json()["indexes"].values())


def test_the_openapi_document_declares_the_bearer_scheme(client: TestClient) -> None:
    spec = client.get("/openapi.json").json()

    assert spec["components"]["securitySchemes"]["HTTPBearer"]["scheme"] == "bearer"
    for path in ("/v1/docs/search", "/v1/search"):
        operation = spec["paths"][path]["post"]
        assert operation["security"] == [{"HTTPBearer": []}]
        assert {"401", "403"} <= set(operation["responses"])
    assert "security" not in spec["paths"]["/health"]["get"]


def test_two_authorization_headers_name_no_one(client: TestClient, engine: sa.Engine) -> None:
    good = bearer(engine, name="twice-sent")["Authorization"]
    assert client.post("/v1/docs/search", json=DOCS,
                       headers={"Authorization": good}).status_code == 200
    for pair in ([good, "Bearer rp_other"], ["Bearer rp_other", good], [good, good]):
        response = client.post("/v1/docs/search", json=DOCS,
                               headers=[("Authorization", value) for value in pair])

        # A proxy may read the other one: the request is refused, whichever comes first.
        assert response.status_code == 401, response.text
        assert "more than one Authorization header" in response.json()["detail"]

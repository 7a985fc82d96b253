"""Request bodies written by someone hostile: unpaired surrogates in every field, bodies
that are not UTF-8, huge and deeply nested JSON, unknown keys by the thousand. Each gets a
documented status with the JSON error shape, never a 500, and never more bytes back than
it sent."""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterator
from typing import Any

import pytest

with warnings.catch_warnings():
    warnings.filterwarnings("ignore", message="Using `httpx` with `starlette.testclient`")
    from fastapi.testclient import TestClient

from ragplate.api.app import create_app
from ragplate.api.errors import MAX_PROBLEMS
from ragplate.catalog.settings import Settings
from ragplate.infra.stores.base import DocumentStore
from tests.testing.people import bearer

pytestmark = pytest.mark.integration

SURROGATE = "\\ud800"  # as JSON text: the decoded string holds a lone surrogate
DOCS = {"query": "How are backups made?", "top_k": 3}
RECORDS = {"entity": "cms.contents", "query": "refund", "mode": "fast", "locale": "en",
           "tenant": "acme", "top_k": 5}


@pytest.fixture(scope="module")
def client(settings: Settings, developer_index: DocumentStore) -> Iterator[TestClient]:
    app = create_app(settings)
    with TestClient(app, raise_server_exceptions=False,
                    headers=bearer(app.state.runtime.engine)) as test_client:
        yield test_client


def post(client: TestClient, path: str, body: bytes) -> Any:
    return client.post(path, content=body, headers={"content-type": "application/json"})


def with_surrogate(body: dict[str, Any], field: str) -> bytes:
    """``body`` as JSON with ``field`` holding a lone surrogate (or a string holding one
    where the field is a number)."""
    text = json.dumps({**body, field: "SURROGATE"})
    return text.replace('"SURROGATE"', f'"x{SURROGATE}"').encode()


@pytest.mark.parametrize(("path", "body", "field"), [
    *[("/v1/docs/search", DOCS, field) for field in DOCS],
    *[("/v1/search", RECORDS, field) for field in RECORDS],
])
def test_a_lone_surrogate_in_any_field_is_a_422(client: TestClient, path: str,
                                                  body: dict[str, Any], field: str) -> None:
    response = post(client, path, with_surrogate(body, field))

    assert response.status_code == 422, response.text
    assert response.json()["error"] == "ValidationError"
    assert field in json.dumps(response.json()["detail"])


@pytest.mark.parametrize("path", ["/v1/docs/search", "/v1/search"])
def test_a_body_that_is_not_utf8_is_the_documented_400(client: TestClient, path: str) -> None:
    response = post(client, path, b'{"query": "caf\xe9"}')

    assert response.status_code == 400
    assert response.json()["error"] == "BadRequest"
    documented = client.get("/openapi.json").json()["paths"][path]["post"]["responses"]
    assert "400" in documented and "413" in documented and "422" in documented


def test_json_nested_beyond_the_parser_is_a_documented_error(client: TestClient) -> None:
    deep = b'{"query": ' + b"[" * 200_000 + b"]" * 200_000 + b"}"

    response = post(client, "/v1/docs/search", deep)

    assert response.status_code in (400, 413, 422)
    assert response.json()["error"] in ("BadRequest", "RequestEntityTooLarge", "ValidationError")


def test_a_body_over_the_cap_is_a_413(client: TestClient) -> None:
    huge = json.dumps({"query": "x", "padding": "y" * 2_000_000}).encode()

    response = post(client, "/v1/docs/search", huge)

    assert response.status_code == 413
    assert response.json()["error"] == "RequestEntityTooLarge"


@pytest.mark.parametrize("path", ["/v1/docs/search", "/v1/search"])
def test_unknown_keys_by_the_thousand_get_a_bounded_answer(client: TestClient,
                                                            path: str) -> None:
    body = {**(DOCS if path == "/v1/docs/search" else RECORDS),
            **{f"unknown_key_{i:05d}": i for i in range(20_000)}}
    sent = json.dumps(body).encode()

    response = post(client, path, sent)

    assert response.status_code == 422
    detail = response.json()["detail"]
    assert len(detail) == MAX_PROBLEMS + 1
    assert detail[-1] == {"loc": [], "msg": f"and {20_000 - MAX_PROBLEMS} more problems",
                          "type": "too_many_errors"}
    assert len(response.content) < len(sent) / 50


def test_an_ordinary_request_still_answers(client: TestClient) -> None:
    response = client.post("/v1/docs/search", json=DOCS)

    assert response.status_code == 200
    assert len(response.json()["hits"]) == 3


def test_the_entity_is_an_enum_of_the_declared_entities(client: TestClient) -> None:
    schema = client.get("/openapi.json").json()["components"]["schemas"]["AppSearchRequest"]

    assert schema["properties"]["entity"]["enum"] == ["cms.contents"]
    refused = client.post("/v1/search", json={**RECORDS, "entity": "cms.pages"})
    assert refused.status_code == 422
    assert refused.json()["error"] == "UnknownEntityError"

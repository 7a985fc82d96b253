"""How errors leave the API (``ragplate.api.errors``): JSON with the right status for
input the validator cannot echo, a database lost after start, a serving profile that is
not declared, and routing errors."""

from __future__ import annotations

import warnings
from collections.abc import Iterator

import pytest
import sqlalchemy as sa

with warnings.catch_warnings():
    warnings.filterwarnings("ignore", message="Using `httpx` with `starlette.testclient`")
    from fastapi.testclient import TestClient

from ragplate.api.app import create_app
from ragplate.catalog.settings import Settings
from ragplate.infra import settings_store
from ragplate.infra.stores.base import DocumentStore
from tests.testing.people import bearer

pytestmark = pytest.mark.integration

#: Nothing listens there: every new connection is refused, as after PostgreSQL stopped.
UNREACHABLE = "postgresql+psycopg://nobody@127.0.0.1:1/none?connect_timeout=2"


@pytest.fixture(scope="module")
def client(settings: Settings, developer_index: DocumentStore) -> Iterator[TestClient]:
    app = create_app(settings)
    with TestClient(app, headers=bearer(app.state.runtime.engine)) as test_client:
        yield test_client


@pytest.mark.parametrize("body", [
    b'{"query": "\\ud800"}',
    b'{"query": "ok", "top_k": "\\ud800"}',
])
def test_a_lone_surrogate_is_a_422_not_a_crash(client: TestClient, body: bytes) -> None:
    response = client.post("/v1/docs/search", content=body,
                           headers={"content-type": "application/json"})

    assert response.status_code == 422
    assert response.json()["error"] == "ValidationError"


def test_a_huge_invalid_field_is_not_echoed(client: TestClient) -> None:
    response = client.post("/v1/docs/search", json={"query": "x" * 200_000})

    assert response.status_code == 422
    assert len(response.content) < 1_000


def test_a_database_lost_after_start_is_a_503_naming_postgresql(settings: Settings) -> None:
    app = create_app(settings)
    # The runtime connected once; from now on connections fail like a stopped server's.
    app.state.runtime.__dict__["engine"] = sa.create_engine(UNREACHABLE)
    # The token is checked in PostgreSQL, which is gone: a 503 too.
    with TestClient(app, headers={"Authorization": "Bearer rp_not-a-stored-token"}) as lost:
        health = lost.get("/health")
        search = lost.post("/v1/docs/search", json={"query": "anything"})
        records = lost.post("/v1/search", json={"entity": "cms.contents", "query": "x",
                                                  "locale": "en", "mode": "fast"})

    assert health.status_code == 503
    assert (health.json()["status"], health.json()["database"]) == ("unavailable",
                                                                    "unavailable")
    assert health.json()["detail"].startswith("PostgreSQL is unavailable: ")
    for response in (search, records):
        assert response.status_code == 503
        assert response.json()["error"] == "DatabaseError"
        assert response.json()["detail"].startswith("PostgreSQL is unavailable: ")
        assert "SELECT" not in response.json()["detail"]
        # An outage of unknown length names no time to come back.
        assert "retry-after" not in response.headers


def test_a_503_names_the_service_not_where_it_keeps_its_files(settings: Settings) -> None:
    app = create_app(settings)
    socket_dir = "/tmp/ragplate-no-such-socket-dir"
    app.state.runtime.__dict__["engine"] = sa.create_engine(
        f"postgresql+psycopg://nobody@/none?host={socket_dir}&connect_timeout=2")
    with TestClient(app, headers={"Authorization": "Bearer rp_not-a-stored-token"}) as lost:
        responses = [lost.get("/health"),
                     lost.post("/v1/docs/search", json={"query": "anything"})]

    for response in responses:
        assert response.status_code == 503
        assert socket_dir not in response.text and ".s.PGSQL" not in response.text
        assert "PostgreSQL is unavailable" in response.text


def test_an_undeclared_serving_profile_is_a_503_and_not_blamed_on_the_database(
    client: TestClient, engine: sa.Engine,
) -> None:
    with engine.begin() as conn:
        serving = settings_store.read(conn, settings_store.ACTIVE_PROFILE)
        settings_store.write_managed(conn, settings_store.ACTIVE_PROFILE, "local:gone/model")
    try:
        health = client.get("/health")
        search = client.post("/v1/docs/search", json={"query": "anything"})
    finally:
        with engine.begin() as conn:
            settings_store.write_managed(conn, settings_store.ACTIVE_PROFILE, serving)

    assert health.status_code == 503
    assert (health.json()["status"], health.json()["database"]) == ("unavailable", "ok")
    assert "'local:gone/model'" in health.json()["detail"]
    assert search.status_code == 503
    assert search.json()["error"] == "ActiveProfileError"
    assert client.get("/health").status_code == 200


def test_routing_errors_share_the_error_shape(client: TestClient) -> None:
    missing = client.get("/v1/nothing")
    wrong_method = client.get("/v1/docs/search")

    assert (missing.status_code, missing.json()) == (404, {"error": "NotFound",
                                                           "detail": "Not Found"})
    assert wrong_method.status_code == 405
    assert wrong_method.json()["error"] == "MethodNotAllowed"
    assert wrong_method.headers["allow"] == "POST"


@pytest.mark.parametrize(("method", "path"), [
    ("GET", "/health/"), ("POST", "/v1/search/"), ("GET", "/app/ai/conversations/"),
    ("GET", "/app/"), ("GET", "/docs/")])
def test_a_trailing_slash_is_the_usual_404_not_a_redirect(client: TestClient, method: str,
                                                          path: str) -> None:
    # Not Starlette's bare 307, whose Location is built on the Host header the client sent.
    response = client.request(method, path, json={"query": "x"} if method == "POST" else None,
                              headers={"Host": "elsewhere.example"}, follow_redirects=False)

    assert response.status_code == 404, response.headers.get("location")
    assert response.json() == {"error": "NotFound", "detail": "Not Found"}


def test_health_answers_head_requests(client: TestClient) -> None:
    response = client.head("/health")

    assert response.status_code == 200
    assert response.content == b""


def test_openapi_declares_the_error_responses(client: TestClient) -> None:
    paths = client.get("/openapi.json").json()["paths"]

    for path in ("/v1/docs/search", "/v1/search"):
        responses = paths[path]["post"]["responses"]
        assert {"422", "503"} <= set(responses), path
        schema = responses["503"]["content"]["application/json"]["schema"]
        assert schema == {"$ref": "#/components/schemas/ErrorBody"}
    assert "503" in paths["/health"]["get"]["responses"]
    streamed = paths["/app/ai/agent"]["post"]["responses"]
    assert all("Retry-After" in streamed[status]["headers"] for status in ("429", "503"))
    # A list names no modification: nothing to find missing or already decided.
    listed = paths["/app/crud/approvals"]["get"]["responses"]
    assert "409" not in listed and "404" not in listed
    assert {"404", "409"} <= set(
        paths["/app/crud/approvals/{modification_id}/approve"]["post"]["responses"])


def test_the_openapi_page_loads_only_bundled_assets(client: TestClient) -> None:
    page = client.get("/docs")

    assert page.status_code == 200 and "text/html" in page.headers["content-type"]
    assert "/openapi.json" in page.text
    assert "https://" not in page.text and "http://" not in page.text
    for asset, kind in (("swagger-ui-bundle.js", "javascript"), ("swagger-ui.css", "css")):
        assert f"/docs/assets/{asset}" in page.text
        served = client.get(f"/docs/assets/{asset}")
        assert served.status_code == 200 and kind in served.headers["content-type"]
        assert len(served.content) > 10_000
    assert client.get("/redoc").status_code == 404


@pytest.fixture(scope="module")
def capped(settings: Settings, developer_index: DocumentStore) -> Iterator[TestClient]:
    small = settings.model_copy(update={"api_max_body_bytes": 2048})
    app = create_app(small)
    with TestClient(app, headers=bearer(app.state.runtime.engine)) as test_client:
        yield test_client


def test_a_body_over_the_cap_is_refused_before_it_is_read(capped: TestClient) -> None:
    response = capped.post("/v1/docs/search", json={"query": "x", "pad": "y" * 5000})

    assert response.status_code == 413
    assert response.json()["error"] == "RequestEntityTooLarge"
    assert "2048 bytes" in response.json()["detail"]


def test_a_chunked_body_is_counted_as_it_arrives(capped: TestClient) -> None:
    def chunks() -> Iterator[bytes]:
        yield b'{"query": "x", "pad": "'
        for _ in range(10):
            yield b"y" * 500
        yield b'"}'

    response = capped.post("/v1/docs/search", content=chunks(),
                           headers={"content-type": "application/json"})

    assert "content-length" not in response.request.headers
    assert response.status_code == 413
    assert response.json()["error"] == "RequestEntityTooLarge"


def test_a_body_under_the_cap_is_served(capped: TestClient) -> None:
    response = capped.post("/v1/docs/search", json={"query": "health endpoint", "top_k": 1})

    assert response.status_code == 200
    assert len(response.json()["hits"]) == 1

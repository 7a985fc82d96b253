"""The FastAPI app over the session's embedded PostgreSQL and the real model."""

from __future__ import annotations

import warnings
from collections.abc import Iterator

import pytest

with warnings.catch_warnings():
    # Starlette nudges towards the httpx2 package; the httpx client works the same here.
    warnings.filterwarnings("ignore", message="Using `httpx` with `starlette.testclient`")
    from fastapi.testclient import TestClient

from ragplate.api.app import create_app
from ragplate.api.errors import NOT_REPEATED
from ragplate.catalog.settings import DEFAULT_PROFILE, Settings
from ragplate.infra.stores.base import DocumentStore
from tests.testing.corpus import DEVELOPER_FILES
from tests.testing.people import bearer

pytestmark = pytest.mark.integration

HIT_FIELDS = {"source_label", "heading_breadcrumb", "excerpt", "score", "similarity"}


@pytest.fixture(scope="module")
def client(settings: Settings, developer_index: DocumentStore) -> Iterator[TestClient]:
    app = create_app(settings)
    with TestClient(app, headers=bearer(app.state.runtime.engine)) as test_client:
        yield test_client


def test_health_reports_database_profile_and_counts(
    client: TestClient, developer_index: DocumentStore
) -> None:
    response = client.get("/health")

    assert response.status_code == 200
    body = response.json()
    assert (body["status"], body["database"]) == ("ok", "ok")
    assert body["active_profile"] == DEFAULT_PROFILE
    assert set(body["indexes"]) == {"developer", "user"}
    assert all(isinstance(n, int) and n >= 0 for n in body["indexes"].values())
    assert body["indexes"]["developer"] == developer_index.count() >= len(DEVELOPER_FILES)
    assert body["detail"] is None


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({"query": ""}, "query"),
        ({"query": "x", "top_k": 11}, "top_k"),
        ({"query": "x", "top_k": 0}, "top_k"),
        ({"query": "x" * 2001}, "query"),
        ({"top_k": 3}, "query"),
        ({"query": "x", "top_k": "many"}, "top_k"),
        ({"query": "x", "top_k": "3"}, "top_k"),
        ({"query": "x\x00y"}, "query"),
        ({"query": "   "}, "query"),
        ({"query": "x", "index": "user"}, "index"),
    ],
)
def test_search_validation_errors_are_422(
    client: TestClient, payload: dict[str, object], field: str
) -> None:
    response = client.post("/v1/docs/search", json=payload)

    assert response.status_code == 422
    body = response.json()
    assert body["error"] == "ValidationError"
    assert ["body", field] in [error["loc"] for error in body["detail"]]
    # Problems are described, the input is not echoed back.
    assert all(set(error) == {"loc", "msg", "type"} for error in body["detail"])


def test_an_unknown_field_is_named_only_when_it_cannot_be_a_secret(client: TestClient) -> None:
    response = client.post("/v1/docs/search",
                           json={"query": "x", "verbose": True, "AKIA2E0A8F3B244C9986": 1})

    assert response.status_code == 422
    located = [error["loc"] for error in response.json()["detail"]]
    assert sorted(located) == [["body", NOT_REPEATED], ["body", "verbose"]]
    assert "AKIA2E0A8F3B244C9986" not in response.text


def test_search_returns_cited_hits(client: TestClient) -> None:
    response = client.post("/v1/docs/search",
                           json={"query": "What does GET /health report?", "top_k": 3})

    assert response.status_code == 200
    hits = response.json()["hits"]
    assert len(hits) == 3
    assert all(set(hit) == HIT_FIELDS for hit in hits)
    assert hits[0]["source_label"] == "dev/api/health.md"
    assert hits[0]["heading_breadcrumb"] == "Health endpoint"
    assert "GET /health" in hits[0]["excerpt"]
    assert len({hit["source_label"] for hit in hits}) == 3
    scores = [hit["score"] for hit in hits]
    assert scores == sorted(scores, reverse=True)
    assert all(hit["source_label"].removeprefix("dev/") in DEVELOPER_FILES for hit in hits)


def test_search_top_k_defaults_to_five(client: TestClient) -> None:
    response = client.post("/v1/docs/search", json={"query": "database"})

    assert response.status_code == 200
    assert len(response.json()["hits"]) == 5


def test_openapi_lists_both_paths(client: TestClient) -> None:
    response = client.get("/openapi.json")

    assert response.status_code == 200
    spec = response.json()
    assert {"/health", "/v1/docs/search"} <= set(spec["paths"])
    assert "get" in spec["paths"]["/health"]
    assert "post" in spec["paths"]["/v1/docs/search"]
    assert spec["info"]["title"] == "ragplate"


def test_the_openapi_document_requires_every_field_a_response_sends(
        client: TestClient) -> None:
    # Every response model is sent whole (no route leaves out an unset or null field), so
    # each of its fields is required, nullable or not: a client generated from the document
    # reads them as always there. A default would make the schema call the field optional.
    spec = client.get("/openapi.json").json()
    schemas = spec["components"]["schemas"]
    sent: set[str] = set()

    def reached(node: object) -> None:
        if isinstance(node, dict):
            name = node.get("$ref", "").rpartition("/")[2]
            if name and name not in sent:
                sent.add(name)
                reached(schemas[name])
            for value in node.values():
                reached(value)
        elif isinstance(node, list):
            for value in node:
                reached(value)

    for operations in spec["paths"].values():
        for operation in operations.values():
            reached(operation["responses"])

    assert {"Health", "AppSearchHit", "ProposalOut", "ErrorBody"} <= sent
    optional = {name: sorted(set(schemas[name].get("properties", {}))
                             - set(schemas[name].get("required", [])))
                for name in sent}
    assert {name: fields for name, fields in optional.items() if fields} == {}


def test_ragplate_errors_become_json_with_their_status(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    # A database URL that cannot be reached: the health check names the problem, 503.
    broken = Settings(home=tmp_path_factory.mktemp("broken-home"),
                      database_url="postgresql://nobody@127.0.0.1:1/none?connect_timeout=2")
    # A token to check: the check needs the database, so the answer is a 503 too.
    headers = {"Authorization": "Bearer rp_not-a-stored-token"}
    with TestClient(create_app(broken), headers=headers) as broken_client:
        health = broken_client.get("/health")
        search = broken_client.post("/v1/docs/search", json={"query": "anything"})

    assert health.status_code == 503
    body = health.json()
    assert (body["status"], body["database"], body["indexes"]) == ("unavailable",
                                                                   "unavailable", {})
    assert "cannot connect to PostgreSQL" in body["detail"]
    assert search.status_code == 503
    assert search.json()["error"] == "DatabaseError"
    assert "cannot connect to PostgreSQL" in search.json()["detail"]


def test_the_api_shows_the_audit_lines_on_a_console_showing_warnings_only(
        settings: Settings) -> None:
    """``ragplate serve``'s console shows warnings of every library; the API lets the
    assistant's write audit through it (it is logged at INFO)."""
    import io
    import logging

    from ragplate.tasks.writes import audit

    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    root = logging.getLogger()
    level = root.level
    logging.getLogger(audit.AUDIT_LOGGER).setLevel(logging.NOTSET)
    root.setLevel(logging.WARNING)
    root.addHandler(handler)
    try:
        audit.logger.info("Assistant write: event=before")
        create_app(settings)
        audit.logger.info("Assistant write: event=after")
        logging.getLogger("ragplate.assistant").info("another line at INFO")
    finally:
        root.removeHandler(handler)
        root.setLevel(level)
    assert stream.getvalue().splitlines() == ["Assistant write: event=after"]

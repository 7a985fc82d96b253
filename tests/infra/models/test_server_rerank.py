"""The rerank client against TEI and Infinity (Cohere-style) doubles."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from ragplate.catalog.errors import RerankAnswerError, SelfHostedServiceError
from ragplate.catalog.settings import ServerSettings, Settings
from ragplate.infra.models import info
from ragplate.infra.models.config import ServerConfig
from ragplate.infra.models.request_id import PATTERN
from ragplate.infra.models.rerank import RerankClient
from tests.infra.models.conftest import failures, free_port
from tests.testing.http_double import HttpDouble, Reply
from tests.testing.server_doubles import RERANK_MODEL, infinity_double, tei_double

QUERY = "how to index documentation"
TEXTS = ["the cafeteria menu", "how to index documentation with ragplate", "how to cook pasta"]
# The share of QUERY's words in each text; the doubles answer by rank (1, 2, 0), the client
# places each score by index.
EXPECTED = [0.0, 1.0, 0.5]


def test_tei_scores_are_placed_by_index_and_the_model_comes_from_info(
    make_server: Callable[..., ServerConfig],
) -> None:
    with tei_double(model_id=RERANK_MODEL) as tei:
        client = RerankClient(make_server(tei.url, role="rerank"))
        result = client.rerank(QUERY, TEXTS)
        body = tei.requests_to("/rerank")[0].json()

    assert result.scores == EXPECTED
    assert result.model == RERANK_MODEL
    assert result.request_id is not None and PATTERN.match(result.request_id)
    assert body == {"query": QUERY, "texts": TEXTS, "truncate": True}


def test_cohere_scores_are_placed_by_index_and_the_model_comes_from_the_answer(
    make_server: Callable[..., ServerConfig],
) -> None:
    with infinity_double() as infinity:
        client = RerankClient(make_server(infinity.url, role="rerank", api="cohere"))
        result = client.rerank(QUERY, TEXTS)
        sent = infinity.requests_to("/v1/rerank")[0].json()

    assert result.scores == EXPECTED and result.model == RERANK_MODEL
    assert sent == {"query": QUERY, "documents": TEXTS, "return_documents": False}


def test_cohere_sends_the_configured_model_and_reads_it_from_settings() -> None:
    with infinity_double() as infinity:
        settings = Settings(servers={"rerank": ServerSettings(
            url=infinity.url, api="cohere", model="jinaai/jina-reranker-v2")})
        result = RerankClient.from_settings(settings).rerank(QUERY, TEXTS)
        sent = infinity.requests_to("/v1/rerank")[0].json()

    assert sent["model"] == "jinaai/jina-reranker-v2"
    assert result.model == "jinaai/jina-reranker-v2"


def test_the_info_model_is_cached_ten_minutes_and_never_a_reason_to_fail(
    make_server: Callable[..., ServerConfig], monkeypatch: pytest.MonkeyPatch,
) -> None:
    now = [1000.0]
    monkeypatch.setattr(info, "clock", lambda: now[0])
    with tei_double(model_id=RERANK_MODEL) as tei:
        client = RerankClient(make_server(tei.url, role="rerank"))
        client.rerank(QUERY, TEXTS)
        client.rerank(QUERY, TEXTS)
        assert len(tei.requests_to("/info")) == 1
        now[0] += 601
        client.rerank(QUERY, TEXTS)
        assert len(tei.requests_to("/info")) == 2
        del tei.routes[("GET", "/info")]  # now /info answers 404
        now[0] += 601
        result = client.rerank(QUERY, TEXTS)

    assert result.scores == EXPECTED and result.model is None


def _answering(body: object, status: int = 200) -> HttpDouble:
    return HttpDouble({("POST", "/rerank"): lambda _: Reply(status, body)})


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        ([{"index": 0, "score": 0.1}, {"index": 0, "score": 0.2}, {"index": 2, "score": 0.3}],
         "repeated index 0"),
        ([{"index": 0, "score": 0.1}, {"index": 1, "score": 0.2}], "2 scores for 3 texts"),
        ([{"index": 0, "score": 0.1}, {"index": 1, "score": 0.2}, {"index": 3, "score": 0.3}],
         "answered index 3"),
        ([{"index": 0, "score": 0.1}, {"index": 1, "score": 0.2}, {"score": 0.3}],
         "answered index None"),
        ([{"index": 0, "score": 0.1}, {"index": 1, "score": 0.2}, {"index": 2, "score": "x"}],
         "no score at 2"),
        ({"error": "not a list"}, "without scores"),
        ([{"index": i, "score": 0.1} for i in range(4)], "4 scores for 3 texts"),
    ],
)
def test_an_answer_that_cannot_be_placed_raises_without_request_id(
    make_server: Callable[..., ServerConfig], server_log: pytest.LogCaptureFixture,
    answer: object, message: str,
) -> None:
    with _answering(answer) as double:
        client = RerankClient(make_server(double.url, role="rerank"))
        with pytest.raises(RerankAnswerError, match=message) as error:
            client.rerank(QUERY, TEXTS)

    assert "request_id" not in str(error.value)
    assert failures(server_log) == []


def test_a_transient_failure_is_retried_once_with_the_same_request_id(
    make_server: Callable[..., ServerConfig], server_log: pytest.LogCaptureFixture,
) -> None:
    answers = [Reply(503, {"error": "loading"}),
               Reply(200, [{"index": i, "score": 0.5} for i in range(3)])]
    with HttpDouble({("POST", "/rerank"): lambda _: answers.pop(0)}) as double:
        client = RerankClient(make_server(double.url, role="rerank"))
        result = client.rerank(QUERY, TEXTS)
        ids = [r.headers["x-request-id"] for r in double.requests_to("/rerank")]

    assert result.scores == [0.5, 0.5, 0.5]
    assert len(ids) == 2 and ids[0] == ids[1] == result.request_id
    assert failures(server_log) == []


def test_a_failed_call_logs_one_warning_and_raises_with_its_request_id(
    make_server: Callable[..., ServerConfig], server_log: pytest.LogCaptureFixture,
) -> None:
    with _answering({"error": "Model is overloaded", "error_type": "Overloaded"}, 429) as double:
        client = RerankClient(make_server(double.url, role="rerank"))
        with pytest.raises(SelfHostedServiceError) as error:
            client.rerank(QUERY, TEXTS)
        sent_id = double.requests_to("/rerank")[0].headers["x-request-id"]

    (warning,) = failures(server_log)
    assert error.value.context() == {"service": "rerank", "endpoint": f"{double.url}/rerank",
                                     "status": 429, "request_id": sent_id}
    assert (warning.service, warning.status, warning.request_id) == (  # type: ignore[attr-defined]
        "rerank", 429, sent_id)
    assert str(error.value).startswith(f"[request_id {sent_id}] rerank call to ")


def test_an_unreachable_server_is_tried_twice_with_one_id(
    make_server: Callable[..., ServerConfig], server_log: pytest.LogCaptureFixture,
) -> None:
    client = RerankClient(make_server(f"http://127.0.0.1:{free_port()}", role="rerank"))

    with pytest.raises(SelfHostedServiceError) as error:
        client.rerank(QUERY, TEXTS)

    assert error.value.status is None
    assert len(failures(server_log)) == 1


def test_no_texts_means_no_call(make_server: Callable[..., ServerConfig]) -> None:
    client = RerankClient(make_server(f"http://127.0.0.1:{free_port()}", role="rerank"))

    assert client.rerank(QUERY, []).scores == []

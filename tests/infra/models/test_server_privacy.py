"""What a failure shows: never an input text, a key, a query string or an error body.

Every server here is configured with credentials and a query string in its URL and a key,
sends secret texts, and fails; the test reads the log (messages and every record field)
and the exception (message, repr and formatted traceback).
"""

from __future__ import annotations

import traceback
from collections.abc import Callable, Iterator

import pytest
from pydantic import SecretStr

from ragplate.catalog.errors import SelfHostedServiceError
from ragplate.catalog.profiles import get_profile
from ragplate.infra.models import OpenAICompatibleEmbedder
from ragplate.infra.models.config import ServerConfig
from ragplate.infra.models.rerank import RerankClient
from ragplate.infra.models.transcription import Transcriber
from tests.infra.models.conftest import failures, free_port
from tests.testing.http_double import HttpDouble, Reply

SECRET_TEXTS = ["salary of Jane Roe is 123456", "patient record 42 diagnosis"]
SECRET_QUERY = "which employee earns the most"
FILE_NAME = "board-meeting-confidential.wav"
KEY = "sk-live-key-0123456789"
ERROR_BODY = "stack trace with secret internals"
NEVER = [*SECRET_TEXTS, SECRET_QUERY, "board-meeting", KEY, ERROR_BODY, "hunter2", "alice",
         "api_key", "QUERYSECRET"]


def _failing(status: int, delay: float = 0.0) -> HttpDouble:
    reply = Reply(status, {"error": ERROR_BODY, "message": ERROR_BODY, "detail": ERROR_BODY},
                  headers={"X-Debug": ERROR_BODY}, delay=delay)
    return HttpDouble({
        ("POST", "/v1/embeddings"): lambda _: reply,
        ("POST", "/rerank"): lambda _: reply,
        ("POST", "/v1/audio/transcriptions"): lambda _: reply,
        ("GET", "/info"): lambda _: reply,
    })


@pytest.fixture(params=["500", "413", "timeout", "unreachable"])
def failing_url(request: pytest.FixtureRequest) -> Iterator[str]:
    """A server URL with credentials and a query string, failing one way or another."""
    if request.param == "unreachable":
        yield f"http://alice:hunter2@127.0.0.1:{free_port()}/?api_key=QUERYSECRET"
        return
    status, delay = (504, 1.0) if request.param == "timeout" else (int(request.param), 0.0)
    with _failing(status, delay) as double:
        yield double.url.replace("http://", "http://alice:hunter2@") + "/?api_key=QUERYSECRET"


def _everything_shown(caplog: pytest.LogCaptureFixture, exc: BaseException | None) -> str:
    shown = [caplog.text]
    shown += [repr(vars(record)) for record in caplog.records]
    if exc is not None:
        shown += [str(exc), repr(exc), "".join(traceback.format_exception(exc))]
    return "\n".join(shown)


def _assert_nothing_secret(shown: str) -> None:
    leaked = [secret for secret in NEVER if secret in shown]
    assert leaked == [], f"leaked: {leaked}"


def test_embeddings_failures_show_no_secret(
    failing_url: str, make_server: Callable[..., ServerConfig],
    server_log: pytest.LogCaptureFixture,
) -> None:
    server = make_server(failing_url, key=_key(), timeout=0.3, batch_size=2)
    profile = get_profile("openai_compatible:intfloat/multilingual-e5-small")
    client = OpenAICompatibleEmbedder(profile, server=server)

    with pytest.raises(SelfHostedServiceError) as error:
        client.embed_passages(SECRET_TEXTS)

    warnings = failures(server_log)
    assert len(warnings) == 2  # two texts, then one
    assert {w.endpoint for w in warnings} == {error.value.endpoint}  # type: ignore[attr-defined]
    assert error.value.endpoint.endswith("/v1/embeddings")
    assert error.value.endpoint.startswith("http://127.0.0.1:")
    _assert_nothing_secret(_everything_shown(server_log, error.value))


def test_rerank_failures_show_no_secret(
    failing_url: str, make_server: Callable[..., ServerConfig],
    server_log: pytest.LogCaptureFixture,
) -> None:
    client = RerankClient(make_server(failing_url, role="rerank", key=_key(), timeout=0.3))

    with pytest.raises(SelfHostedServiceError) as error:
        client.rerank(SECRET_QUERY, SECRET_TEXTS)

    assert len(failures(server_log)) == 1
    _assert_nothing_secret(_everything_shown(server_log, error.value))


def test_transcription_failures_show_no_secret(
    failing_url: str, make_server: Callable[..., ServerConfig],
    server_log: pytest.LogCaptureFixture,
) -> None:
    client = Transcriber(make_server(failing_url, role="transcription", key=_key(), timeout=0.3,
                                     model="whisper-1"))

    assert client.transcribe(b"secret audio", FILE_NAME) is None

    assert len(failures(server_log)) == 1
    _assert_nothing_secret(_everything_shown(server_log, None))


def test_an_unreadable_transcription_answer_shows_no_secret(
    make_server: Callable[..., ServerConfig], server_log: pytest.LogCaptureFixture,
) -> None:
    route = {("POST", "/v1/audio/transcriptions"): lambda _: Reply(200, {"txt": ERROR_BODY})}
    with HttpDouble(route) as double:
        url = double.url.replace("http://", "http://alice:hunter2@") + "/?api_key=QUERYSECRET"
        client = Transcriber(make_server(url, role="transcription", key=_key(), model="m"))
        assert client.transcribe(b"secret audio", FILE_NAME) is None

    assert any("could not be handled" in r.getMessage() for r in server_log.records)
    _assert_nothing_secret(_everything_shown(server_log, None))


def _key() -> SecretStr:
    return SecretStr(KEY)

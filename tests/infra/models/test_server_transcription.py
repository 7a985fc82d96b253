"""The transcription client against a speaches double: ``None`` on any failure."""

from __future__ import annotations

import logging
from collections.abc import Callable

import pytest
from pydantic import SecretStr

from ragplate.catalog.errors import ConfigurationError
from ragplate.catalog.settings import ServerSettings, Settings
from ragplate.infra.models.config import ServerConfig
from ragplate.infra.models.request_id import PATTERN
from ragplate.infra.models.transcription import Transcriber
from tests.infra.models.conftest import failures, free_port
from tests.testing.http_double import HttpDouble, Reply
from tests.testing.server_doubles import speaches_double

AUDIO = b"RIFF\x00\x00\x00\x00WAVEfmt fake audio"
MODEL = "Systran/faster-whisper-small"


def transcriber(url: str, make_server: Callable[..., ServerConfig]) -> Transcriber:
    return Transcriber(make_server(url, role="transcription", model=MODEL))


def test_transcribes_with_a_multipart_form(make_server: Callable[..., ServerConfig]) -> None:
    with speaches_double("hello there") as speaches:
        text = transcriber(speaches.url, make_server).transcribe(
            AUDIO, "board-meeting-2026.wav", language="en", content_type="audio/wav")
        (request,) = speaches.requests_to("/v1/audio/transcriptions")

    assert text == "hello there"
    assert request.headers["content-type"].startswith("multipart/form-data")
    assert PATTERN.match(request.headers["x-request-id"])
    assert request.form() == {"model": MODEL, "response_format": "json", "language": "en",
                              "file": AUDIO}
    # The server needs the extension to tell the format, not the name.
    assert request.filenames() == ["audio.wav"]


def test_a_key_is_sent_as_bearer() -> None:
    with speaches_double() as speaches:
        settings = Settings(servers={"transcription": ServerSettings(
            url=speaches.url, model=MODEL, key=SecretStr("whisper-key"))})
        Transcriber.from_settings(settings).transcribe(AUDIO, "a.wav")
        (request,) = speaches.requests_to("/v1/audio/transcriptions")

    assert request.headers["authorization"] == "Bearer whisper-key"


def test_a_server_without_model_is_a_configuration_error(
    make_server: Callable[..., ServerConfig],
) -> None:
    with pytest.raises(ConfigurationError, match="RAGPLATE_SERVERS__TRANSCRIPTION__MODEL"):
        Transcriber(make_server("http://127.0.0.1:1", role="transcription"))


@pytest.mark.parametrize("status", [500, 422, 401])
def test_an_error_status_gives_none_and_one_warning(
    make_server: Callable[..., ServerConfig], server_log: pytest.LogCaptureFixture, status: int,
) -> None:
    route = {("POST", "/v1/audio/transcriptions"): lambda _: Reply(status, {"detail": "x"})}
    with HttpDouble(route) as double:
        text = transcriber(double.url, make_server).transcribe(AUDIO, "a.wav")

    (warning,) = failures(server_log)
    assert text is None
    assert (warning.service, warning.status) == ("transcription", status)  # type: ignore[attr-defined]


def test_an_unreachable_server_gives_none(
    make_server: Callable[..., ServerConfig], server_log: pytest.LogCaptureFixture,
) -> None:
    text = transcriber(f"http://127.0.0.1:{free_port()}", make_server).transcribe(AUDIO, "a.wav")

    assert text is None
    assert [w.status for w in failures(server_log)] == [None]  # type: ignore[attr-defined]


def test_an_answer_it_cannot_read_is_logged_apart_with_the_class_only(
    make_server: Callable[..., ServerConfig], server_log: pytest.LogCaptureFixture,
) -> None:
    route = {("POST", "/v1/audio/transcriptions"): lambda _: Reply(200, {"segments": []})}
    with HttpDouble(route) as double:
        text = transcriber(double.url, make_server).transcribe(AUDIO, "a.wav")

    assert text is None
    assert failures(server_log) == []
    (record,) = [r for r in server_log.records if "could not be handled" in r.getMessage()]
    assert record.exception == "ValueError"  # type: ignore[attr-defined]
    assert "without text" not in server_log.text  # the class, never the message
    assert PATTERN.match(record.request_id)  # type: ignore[attr-defined]


class _Exploding(logging.Handler):
    def emit(self, record: logging.LogRecord) -> None:
        raise RuntimeError("the log is full")

    def handleError(self, record: logging.LogRecord) -> None:
        raise RuntimeError("the log is full")


def test_it_never_raises_even_when_the_log_cannot_be_written(
    make_server: Callable[..., ServerConfig],
) -> None:
    logger = logging.getLogger("ragplate.servers")
    handler = _Exploding()
    logger.addHandler(handler)
    try:
        text = transcriber(f"http://127.0.0.1:{free_port()}", make_server).transcribe(
            AUDIO, "a.wav")
    finally:
        logger.removeHandler(handler)

    assert text is None

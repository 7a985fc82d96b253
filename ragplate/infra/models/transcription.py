"""Speech to text through an OpenAI-style ``POST /v1/audio/transcriptions`` (speaches).

The contract is ``None`` on any failure: :meth:`Transcriber.transcribe` never raises, even
when the log cannot be written. An outage logs ``Self-hosted AI service call failed``; any
other exception (a bug, an answer it cannot read) logs ``... could not be handled`` with the
exception class only, so it is not taken for an outage.
"""

from __future__ import annotations

import contextlib
from pathlib import PurePath
from typing import Any

import httpx

from ragplate.catalog.errors import ConfigurationError, SelfHostedServiceError
from ragplate.catalog.settings import Settings
from ragplate.infra.models.calls import make_client, send
from ragplate.infra.models.config import (
    TRANSCRIPTION,
    ServerConfig,
    env_name,
    require_role_server,
)
from ragplate.infra.models.errors import log_unhandled
from ragplate.infra.models.request_id import new_request_id

TRANSCRIPTIONS_PATH = "/audio/transcriptions"  # under /v1


class Transcriber:
    """Transcribes audio with the ``transcription`` server (its ``model`` is required)."""

    def __init__(self, server: ServerConfig, *, transport: httpx.BaseTransport | None = None):
        if not server.model:
            raise ConfigurationError(
                f"the transcription server needs a model: set {env_name(TRANSCRIPTION, 'model')}"
            )
        self.server = server
        self.model = server.model
        self.url = server.v1_endpoint(TRANSCRIPTIONS_PATH)
        self._client = make_client(server, transport)

    @classmethod
    def from_settings(cls, settings: Settings) -> Transcriber:
        """The client of the configured ``transcription`` server (ConfigurationError if none)."""
        return cls(require_role_server(TRANSCRIPTION, settings))

    def form(self, language: str | None) -> dict[str, str]:
        """The form fields sent next to the file."""
        fields = {"model": self.model, "response_format": "json"}
        if language:
            fields["language"] = language
        return fields

    def transcribe(
        self,
        audio: bytes,
        filename: str,
        *,
        language: str | None = None,
        content_type: str = "application/octet-stream",
    ) -> str | None:
        """The text of ``audio``, or ``None`` when anything goes wrong.

        The file travels as ``multipart/form-data`` (the server reads form fields, whatever
        its published document says). Only the extension of ``filename`` is sent: the server
        needs it to tell the format, and the name is nobody's business.
        """
        request_id = new_request_id()
        try:
            response, _ = send(
                self._client,
                self.server,
                "POST",
                self.url,
                request_id=request_id,
                files={"file": ("audio" + PurePath(filename).suffix, audio, content_type)},
                data=self.form(language),
            )
            return _text(response.json())
        except SelfHostedServiceError:
            return None  # already logged by send()
        except Exception as exc:
            # The contract is None, even when the log cannot be written.
            with contextlib.suppress(Exception):
                log_unhandled(self.server.role, self.url, request_id, exc)
            return None

    def close(self) -> None:
        """Close the connection pool."""
        self._client.close()


def _text(payload: Any) -> str:
    # response_format=json gives {"text": ...}; a server that ignores the format may send
    # the bare string (speaches declares both).
    if isinstance(payload, str):
        return payload
    if isinstance(payload, dict) and isinstance(payload.get("text"), str):
        return str(payload["text"])
    raise ValueError("transcription answer without text")

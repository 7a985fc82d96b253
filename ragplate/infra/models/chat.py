"""Any OpenAI-compatible ``POST /v1/chat/completions`` server (vLLM, llama.cpp, Ollama,
OpenAI itself): one synchronous call per :meth:`OpenAIChatClient.complete`.

The client does not retry: whoever calls it knows whether the person is waiting (a search
does not retry, a title generated in the background may). A failed call logs one warning
and raises :class:`~ragplate.catalog.errors.ChatModelError`, whose message names the
endpoint (scheme, host, port, path), the reason and the request id, and never the prompt,
the answer, a key or an error body.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Protocol

from ragplate.catalog.errors import ChatModelError, ConfigurationError
from ragplate.catalog.settings import Settings
from ragplate.catalog.text import model_text
from ragplate.infra.models.config import env_name, safe_url
from ragplate.infra.models.errors import FAILED, describe
from ragplate.infra.models.request_id import HEADER, new_request_id

if TYPE_CHECKING:
    # httpx is imported where a call is made: a process without a chat server (the
    # extractive default) never loads it.
    import httpx

__all__ = [
    "CHAT",
    "CHAT_PATH",
    "ChatModel",
    "ChatModelError",
    "ChatReply",
    "OpenAIChatClient",
    "ToolCall",
    "chat_client_from_settings",
    "chat_endpoint",
]

logger = logging.getLogger("ragplate.servers")

CHAT: Final = "chat"
CHAT_PATH: Final = "/chat/completions"  # under /v1, see chat_endpoint
DEFAULT_TIMEOUT: Final = 60.0


@dataclass(frozen=True)
class ToolCall:
    """One function call the model asked for; ``arguments`` is the raw JSON string the
    model sent, which may not be valid JSON (the agent loop decides what to do then)."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class ChatReply:
    """The first choice of a chat completion."""

    content: str | None
    tool_calls: tuple[ToolCall, ...]
    finish_reason: str | None


class ChatModel(Protocol):
    """Anything that completes a conversation: the HTTP client, or a test's script."""

    def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        response_format: dict[str, Any] | None = None,
    ) -> ChatReply:
        """The model's next message for ``messages``."""
        ...


def chat_endpoint(url: str) -> str:
    """``<url>/v1/chat/completions``, or ``<url>/chat/completions`` when ``url`` already
    ends in ``/v1``; the query and credentials of ``url`` are kept.

    The same rule as :meth:`ServerConfig.v1_endpoint`, which cannot be used here because a
    server config's role has no chat server.
    """
    import httpx

    base = httpx.URL(url)
    base_path = base.path.rstrip("/")
    path = CHAT_PATH if base_path.endswith("/v1") else "/v1" + CHAT_PATH
    return str(base.copy_with(path=base_path + path))


class OpenAIChatClient:
    """The :class:`ChatModel` of an OpenAI-compatible server; answers are asked for with
    ``temperature: 0`` so the same conversation gives the same answer where the server can."""

    def __init__(
        self,
        *,
        url: str,
        model: str,
        api_key: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.model = model
        self.url = chat_endpoint(url)
        self.endpoint = safe_url(self.url)
        # The key lives only in the connection pool's headers, never in an attribute that a
        # repr or a log of the client would show.
        import httpx

        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(timeout=timeout, headers=headers, transport=transport)

    def __repr__(self) -> str:
        return f"OpenAIChatClient(endpoint={self.endpoint!r}, model={self.model!r})"

    def body(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        response_format: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """The request body; ``tools`` are OpenAI tool objects
        (``{"type": "function", "function": {name, description, parameters}}``)."""
        body: dict[str, Any] = {"model": self.model, "messages": messages, "temperature": 0}
        if tools:
            body["tools"] = tools
            body["tool_choice"] = "auto"
        if response_format is not None:
            body["response_format"] = response_format
        return body

    def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        response_format: dict[str, Any] | None = None,
    ) -> ChatReply:
        """One ``POST /v1/chat/completions``; raises :class:`ChatModelError` when the server
        cannot be reached, times out, answers non-2xx or answers something else than a chat
        completion."""
        import httpx

        request_id = new_request_id()
        body = self.body(messages, tools=tools, response_format=response_format)
        try:
            response = self._client.post(self.url, json=body, headers={HEADER: request_id})
            response.raise_for_status()
        except (httpx.HTTPError, httpx.InvalidURL) as exc:
            status = exc.response.status_code if isinstance(exc, httpx.HTTPStatusError) else None
            # from None: the httpx exception's text holds the full URL (credentials, query).
            raise self._failure(request_id, status, describe(exc)) from None
        try:
            payload = response.json()
        except ValueError:
            raise self._failure(
                request_id, response.status_code, "the answer is not JSON"
            ) from None
        try:
            return parse_reply(payload)
        except _NotACompletion as exc:
            raise self._failure(request_id, response.status_code, str(exc)) from None

    def close(self) -> None:
        """Close the connection pool."""
        self._client.close()

    def _failure(self, request_id: str, status: int | None, reason: str) -> ChatModelError:
        logger.warning(
            "%s: service=%s endpoint=%s status=%s request_id=%s",
            FAILED,
            CHAT,
            self.endpoint,
            "null" if status is None else status,
            request_id,
            extra={
                "service": CHAT,
                "endpoint": self.endpoint,
                "status": status,
                "request_id": request_id,
            },
        )
        return ChatModelError(
            f"[request_id {request_id}] chat call to {self.endpoint} failed: {reason}"
        )


class _NotACompletion(ValueError):
    """A 2xx answer that is not a chat completion; its text names the field, never a value."""


def parse_reply(payload: Any) -> ChatReply:
    """The first choice of a chat completion answer."""
    choices = payload.get("choices") if isinstance(payload, dict) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise _NotACompletion("the answer is not a chat completion (no choices)")
    choice = choices[0]
    message = choice.get("message")
    if not isinstance(message, dict):
        raise _NotACompletion("the answer's first choice has no message")
    content = message.get("content")
    if content is not None and not isinstance(content, str):
        raise _NotACompletion("the answer's message content is not text")
    finish_reason = choice.get("finish_reason")
    calls = message.get("tool_calls") or []
    if not isinstance(calls, list):
        raise _NotACompletion("the answer's tool_calls is not a list")
    return ChatReply(
        content=None if content is None else model_text(content),
        tool_calls=tuple(_tool_call(call, i) for i, call in enumerate(calls)),
        finish_reason=finish_reason if isinstance(finish_reason, str) else None,
    )


def _tool_call(call: Any, index: int) -> ToolCall:
    function = call.get("function") if isinstance(call, dict) else None
    if not isinstance(function, dict):
        raise _NotACompletion(f"tool call {index} has no function")
    call_id, name, arguments = call.get("id"), function.get("name"), function.get("arguments")
    if not isinstance(call_id, str) or not call_id:
        raise _NotACompletion(f"tool call {index} has no id")
    if not isinstance(name, str) or not name:
        raise _NotACompletion(f"tool call {index} has no function name")
    if isinstance(arguments, dict):
        # Some servers (older Ollama) send the arguments as an object, not as JSON text.
        arguments = json.dumps(arguments)
    if arguments is None:
        arguments = "{}"
    if not isinstance(arguments, str):
        raise _NotACompletion(f"tool call {index} has arguments that are not text")
    return ToolCall(id=call_id, name=name, arguments=arguments)


def chat_client_from_settings(settings: Settings, *,
                              transport: httpx.BaseTransport | None = None
                              ) -> OpenAIChatClient | None:
    """The client of the ``chat`` server (``RAGPLATE_SERVERS__CHAT__*``), or ``None`` when it
    has no URL (the extractive answerer is used then). A URL without a model is a
    :class:`ConfigurationError`."""
    own = settings.servers.get(CHAT)
    if own is None or not own.url:
        return None
    if not own.model:
        raise ConfigurationError(
            f"the chat server at {safe_url(own.url)} needs a model: set {env_name(CHAT, 'model')}"
        )
    return OpenAIChatClient(
        url=own.url,
        model=own.model,
        api_key=own.key.get_secret_value() if own.key is not None else None,
        timeout=own.timeout or DEFAULT_TIMEOUT,
        transport=transport,
    )

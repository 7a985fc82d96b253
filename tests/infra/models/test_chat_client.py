"""The OpenAI-compatible chat client against a scripted loopback chat server.

The contract tests read OpenAI's published document from ``../shared/specs`` (never copied
here): every body the client sends validates against ``CreateChatCompletionRequest`` and
every answer of the double against ``CreateChatCompletionResponse``.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest
from pydantic import BaseModel, SecretStr

from ragplate.catalog.errors import ChatModelError, ConfigurationError
from ragplate.catalog.settings import ServerSettings, Settings
from ragplate.infra.models.chat import (
    ChatReply,
    OpenAIChatClient,
    ToolCall,
    chat_client_from_settings,
    chat_endpoint,
)
from ragplate.infra.models.request_id import PATTERN
from ragplate.tasks.assistant.agent import Tool, run_agent, structured
from tests.infra.models.conftest import SPECS, free_port
from tests.testing import openapi_contract
from tests.testing.chat_double import ChatDouble, Step, Text, ToolCalls, completion
from tests.testing.http_double import Reply
from tests.testing.openapi_contract import ContractDocument

MODEL = "qwen2.5-7b-instruct"
KEY = "sk-chat-key-never-shown"
PROMPT = "confidential-prompt-about-invoice-4711"
ANSWER = "confidential-answer-about-invoice-4711"
ERROR_BODY = "upstream-error-body-must-never-be-shown"
MESSAGES = [{"role": "system", "content": "Answer briefly."}, {"role": "user", "content": PROMPT}]
SEARCH_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "search_docs",
        "description": "Search the documentation.",
        "parameters": {
            "type": "object",
            "properties": {"query": {"type": "string"}},
            "required": ["query"],
        },
    },
}


def client_for(double: ChatDouble, **options: Any) -> OpenAIChatClient:
    options.setdefault("timeout", 5.0)
    return OpenAIChatClient(url=double.url, model=MODEL, **options)


def test_a_text_answer_is_parsed_and_the_request_carries_key_id_and_temperature() -> None:
    with ChatDouble([Text(ANSWER)]) as double:
        client = client_for(double, api_key=KEY)
        reply = client.complete(MESSAGES)
        client.close()
        [request] = double.requests()

    assert reply == ChatReply(content=ANSWER, tool_calls=(), finish_reason="stop")
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert PATTERN.match(request.headers["x-request-id"])
    assert request.json() == {"model": MODEL, "messages": MESSAGES, "temperature": 0}


def test_tool_calls_are_parsed_with_their_raw_arguments_and_tools_are_sent() -> None:
    script = [ToolCalls.of(("search_docs", {"query": "profiles"}), ("search_docs", "{not json"))]
    with ChatDouble(script) as double:
        client = client_for(double)
        reply = client.complete(MESSAGES, tools=[SEARCH_TOOL])
        body = double.bodies()[0]
        headers = double.requests()[0].headers

    assert reply.content is None and reply.finish_reason == "tool_calls"
    assert reply.tool_calls == (
        ToolCall(id="call_1_0", name="search_docs", arguments='{"query": "profiles"}'),
        ToolCall(id="call_1_1", name="search_docs", arguments="{not json"),
    )
    assert body["tools"] == [SEARCH_TOOL] and body["tool_choice"] == "auto"
    assert "authorization" not in headers  # no key configured, none sent


def test_each_call_has_its_own_request_id() -> None:
    with ChatDouble([Text("one"), Text("two")]) as double:
        client = client_for(double)
        client.complete(MESSAGES)
        client.complete(MESSAGES)
        ids = [r.headers["x-request-id"] for r in double.requests()]

    assert len(set(ids)) == 2 and all(PATTERN.match(i) for i in ids)


@pytest.mark.parametrize("suffix", ["/v1", "/v1/"])
def test_a_url_already_ending_in_v1_is_not_doubled(suffix: str) -> None:
    with ChatDouble([Text("ok")]) as double:
        client = OpenAIChatClient(url=double.url + suffix, model=MODEL, timeout=5.0)
        assert client.complete(MESSAGES).content == "ok"
        assert [r.path for r in double.received] == ["/v1/chat/completions"]


@pytest.mark.parametrize(
    ("url", "endpoint"),
    [
        ("http://h:8000", "http://h:8000/v1/chat/completions"),
        ("http://h:8000/", "http://h:8000/v1/chat/completions"),
        ("http://h/llm", "http://h/llm/v1/chat/completions"),
        ("http://h/llm/v1", "http://h/llm/v1/chat/completions"),
        ("http://h/v1?api-version=2", "http://h/v1/chat/completions?api-version=2"),
    ],
)
def test_the_endpoint_keeps_a_path_prefix_and_a_query(url: str, endpoint: str) -> None:
    assert chat_endpoint(url) == endpoint


# -- failures ------------------------------------------------------------------------------

FAILURES = {
    "5xx": Reply(503, {"error": {"message": ERROR_BODY, "prompt": PROMPT}}),
    "4xx": Reply(400, {"error": {"message": ERROR_BODY}}),
    "not json": Reply(200, f"<html>{ERROR_BODY} {PROMPT}</html>".encode()),
    "not a completion": Reply(200, {"object": "list", "data": [ERROR_BODY]}),
    "no message": Reply(200, {"choices": [{"index": 0, "text": ANSWER}]}),
    "content not text": Reply(200, {"choices": [{"message": {"content": [ANSWER]}}]}),
    "tool call without function": Reply(
        200, {"choices": [{"message": {"content": None, "tool_calls": [{"id": "c"}]}}]}
    ),
    "timeout": Reply(200, {"choices": []}, delay=1.5),
}


@pytest.mark.parametrize("kind", list(FAILURES))
def test_a_failed_call_raises_a_chat_model_error_that_shows_no_prompt_body_or_secret(
    kind: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="ragplate.servers")
    with ChatDouble([FAILURES[kind]]) as double:
        # Credentials and a query string in the URL must not reach the message either.
        url = double.url.replace("http://", "http://user:url-secret@") + "?token=qs-secret"
        client = OpenAIChatClient(url=url, model=MODEL, api_key=KEY, timeout=0.4)
        with pytest.raises(ChatModelError) as caught:
            client.complete(MESSAGES)
        request_id = double.requests()[0].headers["x-request-id"]

    message = str(caught.value)
    assert message.startswith(f"[request_id {request_id}] chat call to ")
    assert f"{double.url}/v1/chat/completions" in message
    shown = message + caplog.text
    for secret in (PROMPT, ANSWER, ERROR_BODY, KEY, "url-secret", "qs-secret"):
        assert secret not in shown, secret
    assert caught.value.__cause__ is None and caught.value.__suppress_context__
    [record] = [r for r in caplog.records if r.name == "ragplate.servers"]
    assert getattr(record, "service", None) == "chat"
    assert getattr(record, "request_id", None) == request_id


def test_the_reason_names_the_status_or_the_timeout() -> None:
    with ChatDouble([FAILURES["5xx"], FAILURES["timeout"]]) as double:
        client = client_for(double, timeout=0.4)
        with pytest.raises(ChatModelError, match="503"):
            client.complete(MESSAGES)
        with pytest.raises(ChatModelError, match="ReadTimeout"):
            client.complete(MESSAGES)


def test_a_refused_connection_raises_a_chat_model_error_without_the_prompt() -> None:
    client = OpenAIChatClient(url=f"http://127.0.0.1:{free_port()}", model=MODEL, timeout=2.0)
    with pytest.raises(ChatModelError, match="ConnectError") as caught:
        client.complete(MESSAGES)
    assert PROMPT not in str(caught.value)
    assert "/v1/chat/completions" in str(caught.value)


def test_the_client_does_not_retry() -> None:
    with ChatDouble([FAILURES["5xx"], Text("would have worked")]) as double:
        client = client_for(double)
        with pytest.raises(ChatModelError):
            client.complete(MESSAGES)
        assert len(double.requests()) == 1


def test_the_repr_shows_no_key() -> None:
    client = OpenAIChatClient(url="http://127.0.0.1:1", model=MODEL, api_key=KEY)
    assert KEY not in repr(client) and MODEL in repr(client)


# -- settings ------------------------------------------------------------------------------


def test_no_chat_server_configured_means_no_client() -> None:
    assert chat_client_from_settings(Settings(servers={})) is None
    assert (
        chat_client_from_settings(Settings(servers={"chat": ServerSettings(model=MODEL)})) is None
    )


def test_a_chat_url_without_a_model_names_the_variable_to_set() -> None:
    settings = Settings(servers={"chat": ServerSettings(url="http://127.0.0.1:9")})
    with pytest.raises(ConfigurationError, match="RAGPLATE_SERVERS__CHAT__MODEL"):
        chat_client_from_settings(settings)


def test_the_client_from_settings_sends_the_model_and_key_and_keeps_the_timeout() -> None:
    with ChatDouble([Text("ok"), Reply(200, {}, delay=1.5)]) as double:
        settings = Settings(
            servers={
                "chat": ServerSettings(url=double.url, model=MODEL, key=SecretStr(KEY), timeout=0.3)
            }
        )
        client = chat_client_from_settings(settings)
        assert client is not None
        assert client.complete(MESSAGES).content == "ok"
        with pytest.raises(ChatModelError, match="Timeout"):
            client.complete(MESSAGES)
        request = double.requests()[0]

    assert request.json()["model"] == MODEL
    assert request.headers["authorization"] == f"Bearer {KEY}"


# -- contract ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def openai_doc() -> ContractDocument:
    """OpenAI's published document, read from ../shared/specs."""
    path = SPECS / "openai.openapi.yaml"
    if not path.is_file():
        pytest.skip(f"OpenAI's API document not found at {path}")
    return ContractDocument(path)


@pytest.fixture
def knows_unixtime(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    # The document marks ``created`` with format ``unixtime``, which asserts no more than
    # its type (integer); the shared checker refuses formats it does not know.
    monkeypatch.setattr(openapi_contract, "FORMATS", openapi_contract.FORMATS | {"unixtime"})
    yield


def closed(doc: ContractDocument, schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with its ``allOf`` merged into one closed object.

    The checker closes each ``allOf`` branch on its own, so a body using fields of two
    branches (``temperature`` of one, ``messages`` of the other) would fail both; a field
    declared by no branch must still fail.
    """
    schema = doc.resolve(schema)
    if "allOf" not in schema:
        return schema
    properties: dict[str, Any] = dict(schema.get("properties", {}))
    required: list[str] = list(schema.get("required", []))
    for branch in schema["allOf"]:
        part = closed(doc, branch)
        assert set(part) <= {"type", "properties", "required", "description"}, set(part)
        properties.update(part.get("properties", {}))
        required += [name for name in part.get("required", []) if name not in required]
    return {"type": "object", "properties": properties, "required": required}


class Answer(BaseModel):
    """An answer with a title, as structured() asks for."""

    title: str
    sources: list[str]


def test_every_request_body_follows_create_chat_completion_request(
    openai_doc: ContractDocument,
) -> None:
    schema = closed(openai_doc, openai_doc.request_schema("/chat/completions"))
    assert openai_doc.resolve(openai_doc.request_schema("/chat/completions")) is (
        openai_doc.schema("CreateChatCompletionRequest")
    )
    tool = Tool(
        SEARCH_TOOL["function"]["name"],
        SEARCH_TOOL["function"]["description"],
        SEARCH_TOOL["function"]["parameters"],
        lambda arguments: "found it",
    )
    script: list[Step] = [
        Text(ANSWER),
        ToolCalls.of(("search_docs", {"query": "profiles"}), ("search_docs", {"query": "x"})),
        Text("the answer"),
        Text('```json\n{"title": "Profiles", "sources": ["docs/profiles.md"]}\n```'),
    ]
    with ChatDouble(script) as double:
        client = client_for(double, api_key=KEY)
        client.complete(MESSAGES)
        run_agent(client, MESSAGES, tools=[tool])
        structured(client, MESSAGES, Answer, max_retries=0)
        bodies = double.bodies()

    assert double.exhausted is False
    assert [("tools" in b, "response_format" in b) for b in bodies] == [
        (False, False),
        (True, False),
        (True, False),
        (False, True),
    ]
    assert [m["role"] for m in bodies[2]["messages"]][-3:] == ["assistant", "tool", "tool"]
    for body in bodies:
        openai_doc.validate(body, schema)


def test_the_merged_request_schema_still_refuses_what_the_server_does_not_declare(
    openai_doc: ContractDocument,
) -> None:
    schema = closed(openai_doc, openai_doc.schema("CreateChatCompletionRequest"))
    good = {"model": MODEL, "messages": MESSAGES, "temperature": 0}
    assert openai_doc.errors(good, schema) == []
    assert openai_doc.errors({**good, "temprature": 0}, schema)
    assert openai_doc.errors({**good, "messages": []}, schema)
    assert openai_doc.errors({"messages": MESSAGES}, schema)
    orphan = {"role": "tool", "content": "result"}  # no tool_call_id
    assert openai_doc.errors({**good, "messages": [*MESSAGES, orphan]}, schema)


def test_the_doubles_answers_follow_create_chat_completion_response(
    openai_doc: ContractDocument,
    knows_unixtime: None,
) -> None:
    schema = openai_doc.response_schema("/chat/completions")
    assert openai_doc.resolve(schema) is openai_doc.schema("CreateChatCompletionResponse")
    answers = [
        completion(Text(ANSWER), model=MODEL, number=1),
        completion(
            ToolCalls.of(("search_docs", {"query": "q"}), ("other", "{bad")), model=MODEL, number=2
        ),
        completion(Text("cut", finish_reason="length"), model=MODEL, number=3),
    ]
    for answer in answers:
        openai_doc.validate(answer, schema)


def test_the_client_reads_an_answer_reduced_to_the_required_fields(
    openai_doc: ContractDocument,
    knows_unixtime: None,
) -> None:
    schema = openai_doc.response_schema("/chat/completions")
    reduced = openai_doc.reduce(completion(Text(ANSWER), model=MODEL, number=1), schema)
    openai_doc.validate(reduced, schema)
    with ChatDouble([Reply(200, reduced)]) as double:
        reply = client_for(double).complete(MESSAGES)

    assert reply.content == ANSWER and reply.tool_calls == ()
    for needed in (
        "choices",
        "choices[].message",
        "choices[].message.content",
        "choices[].finish_reason",
    ):
        assert openai_doc.requires(schema, needed), needed
    for needed in ("id", "function.name", "function.arguments"):
        assert openai_doc.requires(openai_doc.schema("ChatCompletionMessageToolCall"), needed)

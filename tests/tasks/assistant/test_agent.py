"""The agent loop and structured answers, against the scripted chat server over real HTTP."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from pydantic import BaseModel

from ragplate.catalog.errors import ChatModelError, StructuredOutputError
from ragplate.infra.models.chat import OpenAIChatClient
from ragplate.tasks.assistant.agent import (
    DATA_TOOL_MAX_RUNS,
    DEFAULT_MAX_RUNS,
    TOOL_FAILURE_MESSAGE,
    TOOL_LIMIT_MESSAGE,
    AgentLoopError,
    PolicyViolation,
    Tool,
    extract_json,
    run_agent,
    structured,
)
from tests.testing.chat_double import ChatDouble, Text, ToolCalls
from tests.testing.http_double import Reply

MESSAGES = [
    {"role": "system", "content": "You answer from the documentation."},
    {"role": "user", "content": "How do I add an embedding profile?"},
]
QUERY_SCHEMA = {
    "type": "object",
    "properties": {"query": {"type": "string"}},
    "required": ["query"],
}
SECRET = "secret-param-name"


class Handler:
    """A tool handler that records its calls and answers from a function."""

    def __init__(self, answer: Any = "docs/profiles.md: declare the profile in the catalog"):
        self.calls: list[dict[str, Any]] = []
        self.answer = answer

    def __call__(self, arguments: dict[str, Any]) -> str:
        self.calls.append(arguments)
        if isinstance(self.answer, BaseException):
            raise self.answer
        return str(self.answer)


@pytest.fixture
def chat() -> Iterator[tuple[ChatDouble, OpenAIChatClient]]:
    """The double (script it with ``double.add``) and a client that calls it."""
    with ChatDouble() as double:
        client = OpenAIChatClient(url=double.url, model="scripted", timeout=5.0)
        yield double, client
        client.close()


@pytest.fixture
def tool_log(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    caplog.set_level(logging.WARNING, logger="ragplate.assistant")
    return caplog


def tool_messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in body["messages"] if m["role"] == "tool"]


def search_tool(handler: Handler, **options: Any) -> Tool:
    return Tool("search_docs", "Search the documentation.", QUERY_SCHEMA, handler, **options)


# -- run_agent -------------------------------------------------------------------------------


def test_a_tool_is_called_and_its_result_handed_back(chat: tuple[ChatDouble, Any]) -> None:
    double, client = chat
    handler = Handler()
    double.add(
        ToolCalls.of(("search_docs", {"query": "embedding profile"})),
        Text("Declare it in the catalog [docs/profiles.md]."),
    )
    sent = json.loads(json.dumps(MESSAGES))

    result = run_agent(client, sent, tools=[search_tool(handler)])

    first, second = double.bodies()
    assert result.text == "Declare it in the catalog [docs/profiles.md]."
    assert result.tool_runs == {"search_docs": 1} and result.rounds == 2
    assert handler.calls == [{"query": "embedding profile"}]
    assert first["tools"][0]["function"] == {
        "name": "search_docs",
        "description": "Search the documentation.",
        "parameters": QUERY_SCHEMA,
    }
    assistant, tool = second["messages"][-2:]
    assert assistant["role"] == "assistant"
    assert assistant["tool_calls"][0]["id"] == "call_1_0"
    assert json.loads(assistant["tool_calls"][0]["function"]["arguments"]) == {
        "query": "embedding profile"
    }
    assert tool == {"role": "tool", "tool_call_id": "call_1_0", "content": handler.answer}
    assert sent == MESSAGES  # the caller's conversation is not changed


def test_a_failing_handler_hands_back_the_fixed_message_and_logs_only_name_and_class(
    chat: tuple[ChatDouble, Any],
    tool_log: pytest.LogCaptureFixture,
) -> None:
    double, client = chat
    handler = Handler(ValueError(SECRET))
    double.add(ToolCalls.of(("search_docs", {"query": "x"})), Text("I could not search."))

    result = run_agent(client, MESSAGES, tools=[search_tool(handler)])

    assert result.text == "I could not search." and len(handler.calls) == 1
    retry = double.requests()[1]
    assert tool_messages(retry.json())[0]["content"] == TOOL_FAILURE_MESSAGE
    assert SECRET.encode() not in retry.body
    [record] = [r for r in tool_log.records if r.name == "ragplate.assistant"]
    assert record.getMessage() == "Tool call failed: tool=search_docs exception=ValueError"
    assert SECRET not in tool_log.text


def test_a_data_tool_called_five_times_runs_three_times(chat: tuple[ChatDouble, Any]) -> None:
    double, client = chat
    handler = Handler("row 42")
    graph = Tool(
        "graph_lookup", "Read a record.", QUERY_SCHEMA, handler, max_runs=DATA_TOOL_MAX_RUNS
    )
    double.add(
        *[ToolCalls.of(("graph_lookup", {"query": f"q{i}"})) for i in range(5)], Text("done")
    )

    result = run_agent(client, MESSAGES, tools=[graph])

    assert DATA_TOOL_MAX_RUNS == 3
    assert [c["query"] for c in handler.calls] == ["q0", "q1", "q2"]
    assert result.tool_runs == {"graph_lookup": 3} and result.rounds == 6
    results = [m["content"] for m in tool_messages(double.bodies()[-1])]
    assert results == ["row 42"] * 3 + [TOOL_LIMIT_MESSAGE] * 2


def test_the_limit_holds_for_calls_of_one_reply_and_other_tools_still_run(
    chat: tuple[ChatDouble, Any],
) -> None:
    double, client = chat
    graph, search = Handler("row"), Handler("doc")
    tools = [
        Tool("graph_lookup", "Read a record.", QUERY_SCHEMA, graph, max_runs=3),
        search_tool(search),
    ]
    calls = [("graph_lookup", {"query": str(i)}) for i in range(5)]
    double.add(ToolCalls.of(*calls, ("search_docs", {"query": "s"})), Text("done"))

    result = run_agent(client, MESSAGES, tools=tools)

    assert len(graph.calls) == 3 and len(search.calls) == 1
    assert result.tool_runs == {"graph_lookup": 3, "search_docs": 1}
    results = [m["content"] for m in tool_messages(double.bodies()[-1])]
    assert results == ["row"] * 3 + [TOOL_LIMIT_MESSAGE] * 2 + ["doc"]


def test_a_tool_may_run_ten_times_by_default() -> None:
    assert search_tool(Handler()).max_runs == DEFAULT_MAX_RUNS == 10


def test_an_unknown_tool_is_a_tool_failure(
    chat: tuple[ChatDouble, Any],
    tool_log: pytest.LogCaptureFixture,
) -> None:
    double, client = chat
    handler = Handler()
    double.add(ToolCalls.of(("drop_tables", {"query": "all"})), Text("No such tool."))

    result = run_agent(client, MESSAGES, tools=[search_tool(handler)])

    assert result.text == "No such tool." and result.tool_runs == {} and handler.calls == []
    assert tool_messages(double.bodies()[1])[0]["content"] == TOOL_FAILURE_MESSAGE
    assert "tool=drop_tables exception=UnknownTool" in tool_log.text


@pytest.mark.parametrize(
    ("arguments", "exception"),
    [("{not json", "JSONDecodeError"), ("[1, 2]", "TypeError"), ('"text"', "TypeError")],
)
def test_arguments_that_are_not_a_json_object_are_a_tool_failure(
    chat: tuple[ChatDouble, Any],
    tool_log: pytest.LogCaptureFixture,
    arguments: str,
    exception: str,
) -> None:
    double, client = chat
    handler = Handler()
    double.add(ToolCalls.of(("search_docs", arguments)), Text("answered without it"))

    result = run_agent(client, MESSAGES, tools=[search_tool(handler)])

    assert handler.calls == [] and result.text == "answered without it"
    assert tool_messages(double.bodies()[1])[0]["content"] == TOOL_FAILURE_MESSAGE
    assert f"tool=search_docs exception={exception}" in tool_log.text


def test_a_policy_violation_ends_the_turn(chat: tuple[ChatDouble, Any]) -> None:
    double, client = chat
    handler = Handler(PolicyViolation("not yours"))
    double.add(ToolCalls.of(("search_docs", {"query": "x"})), Text("never asked for"))

    with pytest.raises(PolicyViolation):
        run_agent(client, MESSAGES, tools=[search_tool(handler)])

    assert len(double.requests()) == 1 and len(handler.calls) == 1


def test_a_model_that_never_answers_stops_after_max_rounds(chat: tuple[ChatDouble, Any]) -> None:
    double, client = chat
    double.add(*[ToolCalls.of(("search_docs", {"query": "again"})) for _ in range(4)])

    with pytest.raises(AgentLoopError, match="after 3 rounds") as caught:
        run_agent(client, MESSAGES, tools=[search_tool(Handler())], max_rounds=3)

    assert len(double.requests()) == 3 and caught.value.http_status == 502


def test_an_empty_answer_is_an_agent_error(chat: tuple[ChatDouble, Any]) -> None:
    double, client = chat
    double.add(Text(""))
    with pytest.raises(AgentLoopError, match="neither text nor a tool call"):
        run_agent(client, MESSAGES)
    assert "tools" not in double.bodies()[0]  # no tools, no tools field


def test_a_failing_model_passes_its_error_through(chat: tuple[ChatDouble, Any]) -> None:
    double, client = chat
    double.add(Reply(502, {"error": "bad gateway"}))
    with pytest.raises(ChatModelError, match="502"):
        run_agent(client, MESSAGES, tools=[search_tool(Handler())])


# -- structured ------------------------------------------------------------------------------


class Verdict(BaseModel):
    """A moderation verdict: both fields required."""

    allowed: bool
    reason: str


def test_an_invalid_answer_costs_one_retry_that_lists_the_problem(
    chat: tuple[ChatDouble, Any],
) -> None:
    double, client = chat
    double.add(
        Text('{"allowed": "VALUE-NOT-TO-ECHO"}'),
        Text('{"allowed": false, "reason": "asks for another tenant"}'),
    )

    verdict = structured(client, MESSAGES, Verdict, max_retries=2)

    assert verdict == Verdict(allowed=False, reason="asks for another tenant")
    first, second = double.bodies()
    assert first["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "Verdict", "schema": Verdict.model_json_schema(), "strict": False},
    }
    assert first["messages"] == MESSAGES
    assistant, retry = second["messages"][-2:]
    assert assistant == {"role": "assistant", "content": '{"allowed": "VALUE-NOT-TO-ECHO"}'}
    assert retry["role"] == "user"
    assert "- allowed: Input should be a valid boolean" in retry["content"]
    assert "- reason: Field required" in retry["content"]
    assert "VALUE-NOT-TO-ECHO" not in retry["content"]


def test_a_fenced_json_answer_is_accepted_without_retry(chat: tuple[ChatDouble, Any]) -> None:
    double, client = chat
    double.add(Text('Here it is:\n```json\n{"allowed": true, "reason": "fine"}\n```\nBye.'))

    assert structured(client, MESSAGES, Verdict, max_retries=2) == Verdict(
        allowed=True, reason="fine"
    )
    assert len(double.requests()) == 1


def test_an_answer_nested_too_deeply_is_retried_not_a_crash(
        chat: tuple[ChatDouble, Any]) -> None:
    double, client = chat
    double.add(Text('{"allowed":' * 20000 + "true" + "}" * 20000),
               Text('{"allowed": true, "reason": "ok"}'))

    assert structured(client, MESSAGES, Verdict, max_retries=1).allowed is True
    assert "nests arrays or objects too deeply" in double.bodies()[1]["messages"][-1]["content"]


def test_what_a_model_may_not_bring_in_is_taken_out_of_its_text_and_tool_arguments(
        chat: tuple[ChatDouble, Any]) -> None:
    double, client = chat
    handler = Handler()
    double.add(ToolCalls.of(("search_docs", {"query": "emb\u0000ed\u202eding"})),
               Text("Declare\u0000 it \u202ein the catalog\ud800."))

    result = run_agent(client, MESSAGES, tools=[search_tool(handler)])

    assert handler.calls == [{"query": "embedding"}]
    assert result.text == "Declare it in the catalog."


def test_an_answer_that_is_not_json_is_retried(chat: tuple[ChatDouble, Any]) -> None:
    double, client = chat
    double.add(Text("I think it is allowed."), Text('{"allowed": true, "reason": "ok"}'))

    assert structured(client, MESSAGES, Verdict, max_retries=1).allowed is True
    retry = double.bodies()[1]["messages"][-1]["content"]
    assert "not valid JSON" in retry


def test_an_answer_that_never_validates_raises_after_max_retries_plus_one_requests(
    chat: tuple[ChatDouble, Any],
) -> None:
    double, client = chat
    double.add(*[Text('{"allowed": "SECRET-ANSWER-VALUE"}') for _ in range(5)])

    with pytest.raises(StructuredOutputError) as caught:
        structured(client, MESSAGES, Verdict, max_retries=2)

    assert len(double.requests()) == 3
    message = str(caught.value)
    assert "Verdict" in message and "after 3 attempts" in message
    assert "reason: Field required" in message and "SECRET-ANSWER-VALUE" not in message
    assert caught.value.http_status == 502


def test_no_retries_means_one_request(chat: tuple[ChatDouble, Any]) -> None:
    double, client = chat
    double.add(Text("no"), Text('{"allowed": true, "reason": "late"}'))
    with pytest.raises(StructuredOutputError, match="after 1 attempt: "):
        structured(client, MESSAGES, Verdict, max_retries=0)
    assert len(double.requests()) == 1


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a": 1}', '{"a": 1}'),
        ('```\n{"a": 1}\n```', '{"a": 1}'),
        ('Sure! {"a": {"b": 2}} Hope it helps.', '{"a": {"b": 2}}'),
        ("nothing", "nothing"),
    ],
)
def test_extract_json(text: str, expected: str) -> None:
    assert extract_json(text) == expected

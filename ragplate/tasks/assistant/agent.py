"""The tool-calling loop of the assistant and structured answers of the chat model.

A tool that fails — an unknown name, arguments that are not a JSON object, a handler that
raises — hands the model a fixed message as its result, never the exception's text (which
can name a parameter or a record), and logs the tool name and the exception class; the model
then tries again or answers without the tool, and the turn goes on. A
:class:`PolicyViolation` is a decision, not a failure: it ends the turn.

:func:`structured` asks for an answer as data: it sends the pydantic model's JSON schema,
reads the JSON (a Markdown fence is fine), validates it, and asks again with the list of
what was wrong, up to ``max_retries`` times. The retries are the caller's constant, not a
setting.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final, TypeVar

from pydantic import BaseModel, ValidationError

from ragplate.catalog.errors import RagplateError, StructuredOutputError
from ragplate.catalog.text import model_data
from ragplate.infra.models.chat import ChatModel, ChatReply, ToolCall

__all__ = [
    "DATA_TOOL_MAX_RUNS",
    "DEFAULT_MAX_RUNS",
    "TOOL_FAILURE_MESSAGE",
    "TOOL_LIMIT_MESSAGE",
    "AgentLoopError",
    "AgentResult",
    "PolicyViolation",
    "Tool",
    "run_agent",
    "structured",
]

logger = logging.getLogger("ragplate.assistant")

DEFAULT_MAX_RUNS: Final = 10
# Tools that read or change records (graph_*, crud_*): a model repeating one is more likely
# probing than helping.
DATA_TOOL_MAX_RUNS: Final = 3
TOOL_FAILURE_MESSAGE: Final = (
    "The tool could not be run. Try again with other arguments, or answer without it."
)
TOOL_LIMIT_MESSAGE: Final = (
    "The tool was not run: it was called too many times in this turn. "
    "Answer with what you already have."
)

T = TypeVar("T", bound=BaseModel)

_FENCE = re.compile(r"```(?:json|JSON)?[ \t]*\r?\n?(.*?)```", re.DOTALL)
# OpenAI accepts only these characters in a response format's name.
_NAME_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


class PolicyViolation(Exception):
    """Raised by a tool handler for a policy decision (a forbidden record, an operation the
    person may not do): it ends the turn instead of being handed back to the model."""


class AgentLoopError(RagplateError):
    """The chat model kept calling tools for ``max_rounds`` rounds, or answered with
    neither text nor a tool call."""

    http_status = 502


@dataclass(frozen=True)
class Tool:
    """A function the model may call. ``handler`` receives the parsed arguments and returns
    the text handed back to the model; ``max_runs`` bounds its calls in one turn."""

    name: str
    description: str
    parameters: dict[str, Any]
    handler: Callable[[dict[str, Any]], str]
    max_runs: int = DEFAULT_MAX_RUNS

    def schema(self) -> dict[str, Any]:
        """The OpenAI tool object sent to the model."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }


@dataclass(frozen=True)
class AgentResult:
    """The model's final answer, how many calls of each tool were accepted (run, or failed
    while running; not those refused by ``max_runs``) and how many model calls it took."""

    text: str
    tool_runs: dict[str, int]
    rounds: int


def run_agent(
    model: ChatModel,
    messages: list[dict[str, Any]],
    *,
    tools: Sequence[Tool] = (),
    max_rounds: int = 8,
) -> AgentResult:
    """Let the model call ``tools`` until it answers with text, at most ``max_rounds`` model
    calls. ``messages`` is not changed (the loop works on a copy).

    Raises :class:`AgentLoopError` when the model does not answer within ``max_rounds``;
    a :class:`PolicyViolation` of a handler and a
    :class:`~ragplate.catalog.errors.ChatModelError` of the model pass through.
    """
    if max_rounds < 1:
        raise ValueError("max_rounds must be at least 1")
    by_name = {tool.name: tool for tool in tools}
    if len(by_name) != len(tools):
        raise ValueError("two tools have the same name")
    schemas = [tool.schema() for tool in tools] or None
    conversation = list(messages)
    runs: dict[str, int] = {}
    for round_number in range(1, max_rounds + 1):
        reply = model.complete(conversation, tools=schemas)
        if not reply.tool_calls:
            if not reply.content:
                raise AgentLoopError("the chat model answered with neither text nor a tool call")
            return AgentResult(text=reply.content, tool_runs=runs, rounds=round_number)
        conversation.append(_assistant_message(reply))
        for call in reply.tool_calls:
            result = _run_tool(call, by_name, runs)
            conversation.append({"role": "tool", "tool_call_id": call.id, "content": result})
    raise AgentLoopError(
        f"the chat model was still calling tools after {max_rounds} rounds; no answer"
    )


def _assistant_message(reply: ChatReply) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": reply.content,
        "tool_calls": [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments},
            }
            for call in reply.tool_calls
        ],
    }


def _run_tool(call: ToolCall, tools: dict[str, Tool], runs: dict[str, int]) -> str:
    """The result handed back for one call: the handler's text, or a fixed message."""
    tool = tools.get(call.name)
    if tool is None:
        _log_failure(call.name, "UnknownTool")
        return TOOL_FAILURE_MESSAGE
    if runs.get(tool.name, 0) >= tool.max_runs:
        logger.warning(
            "Tool call refused: tool=%s max_runs=%d",
            tool.name,
            tool.max_runs,
            extra={"tool": tool.name, "max_runs": tool.max_runs},
        )
        return TOOL_LIMIT_MESSAGE
    # A call with bad arguments counts as a run too: otherwise a model stuck on them would
    # never reach the limit.
    runs[tool.name] = runs.get(tool.name, 0) + 1
    try:
        arguments = model_data(json.loads(call.arguments))
        if not isinstance(arguments, dict):
            raise TypeError("tool arguments are not a JSON object")
        result = tool.handler(arguments)
        if not isinstance(result, str):
            raise TypeError("a tool handler returned something else than text")
    except PolicyViolation:
        raise
    except Exception as exc:
        _log_failure(tool.name, type(exc).__name__)
        return TOOL_FAILURE_MESSAGE
    return result


def _log_failure(name: str, exception: str) -> None:
    # The name comes from the model when the tool is unknown: bound it.
    shown = name[:64]
    logger.warning(
        "Tool call failed: tool=%s exception=%s",
        shown,
        exception,
        extra={"tool": shown, "exception": exception},
    )


def structured(
    model: ChatModel,
    messages: list[dict[str, Any]],
    schema: type[T],
    *,
    max_retries: int,
    tools: Sequence[Tool] = (),
    runs: dict[str, int] | None = None,
    max_rounds: int = 8,
) -> T:
    """The model's answer as an instance of ``schema``, after the ``tools`` it called.

    Each failed answer (no text, no JSON, a JSON that ``schema`` refuses) is followed by a
    user message listing what was wrong — field locations and pydantic's messages, never
    the values sent — and a new request, ``max_retries`` times at most; then
    :class:`~ragplate.catalog.errors.StructuredOutputError` lists the last problems. Tool
    calls are run as :func:`run_agent` runs them (``runs`` counts them), at most
    ``max_rounds`` rounds of them (:class:`AgentLoopError`). ``messages`` is not changed.
    """
    if max_retries < 0:
        raise ValueError("max_retries cannot be negative")
    by_name = {tool.name: tool for tool in tools}
    if len(by_name) != len(tools):
        raise ValueError("two tools have the same name")
    schemas = [tool.schema() for tool in tools] or None
    response_format = {
        "type": "json_schema",
        "json_schema": {
            "name": _NAME_UNSAFE.sub("_", schema.__name__)[:64] or "answer",
            "schema": schema.model_json_schema(),
            "strict": False,
        },
    }
    conversation = list(messages)
    counted = runs if runs is not None else {}
    problems: list[str] = []
    attempts = rounds = 0
    while attempts <= max_retries:
        reply = model.complete(conversation, tools=schemas, response_format=response_format)
        if reply.tool_calls and schemas:
            rounds += 1
            if rounds > max_rounds:
                raise AgentLoopError(f"the chat model was still calling tools after "
                                     f"{max_rounds} rounds; no answer")
            conversation.append(_assistant_message(reply))
            for call in reply.tool_calls:
                result = _run_tool(call, by_name, counted)
                conversation.append({"role": "tool", "tool_call_id": call.id,
                                     "content": result})
            continue
        attempts += 1
        parsed, problems = _parse(reply.content, schema)
        if parsed is not None:
            return parsed
        conversation.append({"role": "assistant", "content": reply.content or ""})
        conversation.append({"role": "user", "content": _retry_message(problems)})
    raise StructuredOutputError(
        f"the chat model's answer did not follow {schema.__name__} after {attempts} "
        f"attempt{'s' if attempts != 1 else ''}: " + "; ".join(problems)
    )


def extract_json(text: str) -> str:
    """The JSON of an answer: the inside of its first Markdown fence, else the text from
    its first ``{`` to its last ``}``, else the text itself."""
    fenced = _FENCE.search(text)
    if fenced:
        return fenced.group(1).strip()
    start, end = text.find("{"), text.rfind("}")
    return text[start : end + 1] if 0 <= start < end else text.strip()


def _parse(content: str | None, schema: type[T]) -> tuple[T | None, list[str]]:
    if not content or not content.strip():
        return None, ["the answer has no text; send a JSON object"]
    try:
        # A JSON escape can carry what the reply's text could not (model_text).
        data = model_data(json.loads(extract_json(content)))
    except json.JSONDecodeError as exc:
        # The decoder's message names a position, not the text.
        return None, [
            f"the answer is not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})"
        ]
    except RecursionError:
        return None, ["the answer nests arrays or objects too deeply"]
    try:
        return schema.model_validate(data), []
    except ValidationError as exc:
        return None, [
            f"{_location(error['loc'])}: {error['msg']}"
            for error in exc.errors(include_url=False, include_input=False, include_context=False)
        ]


def _location(loc: tuple[int | str, ...]) -> str:
    return ".".join(str(part) for part in loc) or "(the whole answer)"


def _retry_message(problems: list[str]) -> str:
    lines = "\n".join(f"- {problem}" for problem in problems)
    return (
        "Your answer could not be used:\n"
        f"{lines}\n"
        "Answer again with only a JSON object that follows the schema."
    )

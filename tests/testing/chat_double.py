"""A scripted OpenAI-compatible chat server on loopback.

``POST /v1/chat/completions`` answers with the next step of a script, as a real
``chat.completion`` object: a :class:`Text` answer, :class:`ToolCalls`, or any
:class:`~tests.testing.http_double.Reply` (an error status, a body that is not a completion,
a ``delay`` that outlasts the client's timeout). Every request is recorded; once the script
is spent the double answers 500 and sets :attr:`ChatDouble.exhausted`, so a client that asks
more often than the test expects fails instead of hanging.
"""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from tests.testing.http_double import HttpDouble, Received, Reply

CHAT_PATH = "/v1/chat/completions"
EXHAUSTED_BODY = {"error": {"message": "the chat double's script is exhausted"}}


@dataclass(frozen=True)
class Text:
    """An answer with text and no tool call."""

    content: str
    finish_reason: str = "stop"


@dataclass(frozen=True)
class ToolCalls:
    """An answer that calls tools: ``(name, arguments)`` pairs, where ``arguments`` is the
    raw JSON text sent (so a test can send invalid JSON) or a dict serialised for it."""

    calls: tuple[tuple[str, str | dict[str, Any]], ...]
    content: str | None = None

    @classmethod
    def of(cls, *calls: tuple[str, str | dict[str, Any]]) -> ToolCalls:
        """``ToolCalls.of(("search", {"q": "x"}), ...)``."""
        return cls(tuple(calls))


Step = Text | ToolCalls | Reply | Callable[[Received], "Text | ToolCalls | Reply"]


def completion(step: Text | ToolCalls, *, model: str, number: int) -> dict[str, Any]:
    """A ``chat.completion`` object for one scripted answer (every field OpenAI sends)."""
    message: dict[str, Any] = {"role": "assistant", "refusal": None}
    if isinstance(step, Text):
        message["content"] = step.content
        finish_reason = step.finish_reason
        completion_text = step.content
    else:
        message["content"] = step.content
        message["tool_calls"] = [
            {
                "id": f"call_{number}_{index}",
                "type": "function",
                "function": {
                    "name": name,
                    "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments),
                },
            }
            for index, (name, arguments) in enumerate(step.calls)
        ]
        finish_reason = "tool_calls"
        completion_text = json.dumps(message["tool_calls"])
    completion_tokens = max(1, len(completion_text.split()))
    return {
        "id": f"chatcmpl-double{number:04d}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {"index": 0, "message": message, "finish_reason": finish_reason, "logprobs": None}
        ],
        "usage": {
            "prompt_tokens": 10,
            "completion_tokens": completion_tokens,
            "total_tokens": 10 + completion_tokens,
        },
    }


class ChatDouble(HttpDouble):
    """The scripted chat server; use it as a context manager (``with ChatDouble([...])``)."""

    def __init__(self, script: Iterable[Step] = ()) -> None:
        super().__init__()
        self.script: list[Step] = list(script)
        self.exhausted = False
        self._numbers = itertools.count(1)
        self.routes[("POST", CHAT_PATH)] = self._answer

    def add(self, *steps: Step) -> None:
        """Append steps to the script."""
        with self._lock:
            self.script.extend(steps)

    def requests(self) -> list[Received]:
        """The chat completion requests received, in order."""
        return self.requests_to(CHAT_PATH)

    def bodies(self) -> list[dict[str, Any]]:
        """The request bodies received, parsed."""
        return [request.json() for request in self.requests()]

    def _answer(self, request: Received) -> Reply:
        with self._lock:
            step = self.script.pop(0) if self.script else None
            number = next(self._numbers)
            if step is None:
                self.exhausted = True
        if step is None:
            return Reply(500, EXHAUSTED_BODY)
        if not isinstance(step, Text | ToolCalls | Reply):
            step = step(request)
        if isinstance(step, Reply):
            return step
        try:
            model = str(request.json().get("model", "double-model"))
        except (ValueError, AttributeError):
            return Reply(400, {"error": {"message": "the body is not a JSON object"}})
        return Reply(200, completion(step, model=model, number=number))

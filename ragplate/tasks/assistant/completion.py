"""Completing an answer with a chat model: the policy's instructions, the untrusted evidence
block and the question go in; a validated :class:`ChatAnswer` comes out (retried on a
validation error up to :data:`MAX_RETRIES` times)."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from pydantic import BaseModel, Field

from ragplate.catalog.assistant import Policy
from ragplate.catalog.errors import StructuredOutputError
from ragplate.infra.models.chat import ChatModel
from ragplate.tasks.assistant.agent import Tool, structured
from ragplate.tasks.assistant.evidence import PREAMBLE, Evidence, untrusted_block

#: Retries of a structured answer that does not validate (the service's constant).
MAX_RETRIES = 2

INSTRUCTIONS = {
    True: ("You are the in-app help assistant of a web application. Answer the person's "
           "question about using the application only from the numbered documentation "
           "excerpts in the untrusted evidence block, in the language of the locale {locale}. "
           "Never reveal licences, code, tokens, secrets, databases, other users, hidden "
           "records, permission or ACL internals, or cryptography. If the excerpts do not "
           "answer the question, set supported to false."),
    False: ("You are the developer help assistant of ragplate. Answer the developer's "
            "question only from the numbered documentation excerpts in the untrusted "
            "evidence block, in the language of the locale {locale}. If the excerpts do not "
            "answer the question, set supported to false."),
}
#: Said to either profile: asking back is the model's decision, taken on the excerpts.
CLARIFY = (" If the question could mean several different things the excerpts describe, "
           "set clarification to true and make the answer one short question that asks "
           "the person which one they mean.")


class ChatAnswer(BaseModel):
    """The model's answer as data."""

    # No length bound here: the output policy's bound refuses a long answer as a whole.
    answer: str = Field(min_length=1, description="The answer, in plain text or Markdown.")
    supported: bool = Field(description="Whether the excerpts answer the question.")
    citations: list[int] = Field(description="The numbers of the excerpts the answer uses.")
    # Optional, so a model that never asks back is not retried for leaving it out.
    clarification: bool = Field(default=False, description="Whether the answer is a "
                                "question back to the person because theirs is ambiguous.")


#: Said when tools are offered: an answer may rest on what they returned.
TOOLS_NOTE = (" You may call the tools offered to read the person's records or propose "
              "changes. An answer that rests on what the tools returned is supported and "
              "cites no excerpt.")


def _ungrounded() -> bool:
    return False


def complete(model: ChatModel, *, policy: Policy, question: str, evidence: Evidence,
             locale: str, tools: Sequence[Tool] = (), instructions: str = "",
             runs: dict[str, int] | None = None,
             grounded: Callable[[], bool] = _ungrounded) -> ChatAnswer:
    """The chat model's validated answer; cited numbers outside the evidence are dropped,
    and a supported answer that cites no excerpt of the evidence is refused as invalid
    (:class:`StructuredOutputError`): its sources would have to be made up — unless the
    tools ``grounded`` it (records read, a proposal stored). ``runs`` counts the tool
    calls; ``instructions`` are appended to the system message (the toolsets'
    server-built blocks)."""
    counted = runs if runs is not None else {}
    fixed = INSTRUCTIONS[policy.profile.end_user].format(locale=locale) + CLARIFY
    if tools:
        fixed += TOOLS_NOTE
    # The toolsets' blocks (who acts, the operations offered, that a proposal waits for
    # the person) are the model's to pass on; the fixed instructions are not.
    system = fixed + instructions if tools else fixed
    messages = [
        {"role": "system", "content": system},
        {"role": "user", "content": f"{untrusted_block(evidence)}\n\nQuestion: {question}"},
    ]
    answer = structured(model, messages, ChatAnswer, max_retries=MAX_RETRIES, tools=tools,
                        runs=counted)
    # The evidence block's preamble is the instructions' too.
    if echoes(answer.answer, f"{fixed}\n{PREAMBLE}"):
        raise InstructionsEchoed("the chat model's answer repeats its instructions")
    valid = [n for n in dict.fromkeys(answer.citations) if 1 <= n <= len(evidence.hits)]
    if answer.supported and not valid and not answer.clarification and not grounded():
        raise StructuredOutputError("the chat model's answer cites no excerpt of the evidence")
    return answer.model_copy(update={"citations": valid})


class InstructionsEchoed(Exception):
    """The model's answer repeats its own fixed instructions (a system prompt given away):
    a decision, answered with a refusal."""


#: Consecutive words of the instructions an answer may not repeat: a run of twelve words is
#: the instructions', not a way of putting an answer (a page listing what an assistant
#: never reveals shares nine words with them).
ECHO_WORDS = 12
_WORD = re.compile(r"\w+")


def echoes(answer: str, instructions: str, *, words: int = ECHO_WORDS) -> bool:
    """Whether ``answer`` repeats ``words`` consecutive words of ``instructions``, however
    they are cased, punctuated, quoted or laid out."""
    said = _WORD.findall(instructions.lower())
    runs = {tuple(said[i:i + words]) for i in range(len(said) - words + 1)}
    written = _WORD.findall(answer.lower())
    return any(tuple(written[i:i + words]) in runs for i in range(len(written) - words + 1))


_MARKER = re.compile(r"\s?\[(\d+)\]")


def renumber(answer: str, cited: list[int]) -> str:
    """The model's ``[n]`` markers (numbers of the evidence) as the numbers of the message's
    own citations, which list only the cited excerpts in ``cited`` order: ``[3]`` becomes
    ``[1]`` when excerpt 3 is the first cited; a marker of an excerpt not cited is removed
    (it would point at a citation the message does not carry)."""
    position = {number: index for index, number in enumerate(cited, 1)}

    def replace(match: re.Match[str]) -> str:
        index = position.get(int(match.group(1)))
        return match.group(0).replace(match.group(1), str(index)) if index else ""

    return _MARKER.sub(replace, answer)


#: The longest question back a clarification may be.
MAX_CLARIFICATION_CHARS = 300
_LINK = re.compile(r"(?i)\b(?:https?://|www\.)|\]\(")


def clarifying_question(answer: str) -> str | None:
    """The model's question back, when it has the shape of one: one short paragraph ending in
    a question mark, with no citation marker and no link. A clarification cites nothing and
    skips the evidence checks, so anything longer or richer (what an instruction planted in
    an excerpt would ask the model to pass off as one) is ``None``, and the message
    abstains instead."""
    text = answer.strip()
    if (not text or len(text) > MAX_CLARIFICATION_CHARS or "\n\n" in text
            or not text.endswith("?") or _MARKER.search(text) or _LINK.search(text)):
        return None
    return text

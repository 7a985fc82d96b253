"""The scripted model's proposal calls against the real proposal tools: valid proposals are
recorded, forged ones refused, an applied claim is written for the answer path to replace,
and every other case answers as before."""

from __future__ import annotations

import json
from typing import Any

from ragplate.catalog.assistant_datasets import AssistantCase
from ragplate.infra.models.chat import ChatReply
from ragplate.tasks.assistant.claims import claims_change, replace_claims
from ragplate.tasks.assistant.ui_proposals import ACCEPTED, REFUSED, UiProposals
from ragplate.tasks.evaluation.assistant_fixtures import (
    ANSWERS,
    APPLIED_CLAIMS,
    PROPOSED,
    ScriptedCompletion,
)

LAYOUT = {"kind": "preference", "target": {"namespace": "ui", "key": "defaultListLayout"},
          "schema": {"type": "string", "enum": ["table", "cards"]}, "current": "table",
          "description": "Default layout of lists"}
FILTERS = {"kind": "view_state", "target": {"resource": "erp/orders", "view": "list"},
           "schema": {"type": "object", "properties": {"status": {
               "type": "string", "enum": ["open", "closed"]}}, "additionalProperties": False},
           "current": {"status": "open"}, "description": "Filters of the orders list"}
MESSAGES = [{"role": "system", "content": "You are the in-app help assistant."},
            {"role": "user", "content": "[1] Lists guide\nexcerpt\n\nQuestion: q"}]


def case(slices: list[str], *, entries: tuple[dict[str, Any], ...] = (LAYOUT,),
         expected: int | None = 1, locale: str = "en") -> AssistantCase:
    page = {"resource": "erp/orders", "proposable": list(entries)} if entries else None
    return AssistantCase(
        id="c", query="Can lists be easier to read?", locale=locale, module_key=None,
        expected_surface="documentation", expected_citations=["Lists guide"],
        expect_clarification=False, expect_refusal=False, slices=slices, page=page,
        expected_proposals=expected if page is not None else None)


def turn(scripted: AssistantCase, *, allowed: bool = True
         ) -> tuple[UiProposals, list[ChatReply], dict[str, Any]]:
    """One turn of ``scripted`` against the proposal tools: the replies and the answer."""
    toolset = UiProposals(allowed, scripted.page)
    tools = {t.name: t for t in toolset.tools()}
    model = ScriptedCompletion(scripted)
    messages: list[dict[str, Any]] = list(MESSAGES)
    replies = []
    reply = model.complete(messages, tools=[t.schema() for t in tools.values()] or None)
    replies.append(reply)
    while reply.tool_calls:
        messages.append({"role": "assistant", "content": None})
        for call in reply.tool_calls:
            result = tools[call.name].handler(json.loads(call.arguments))
            messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
        reply = model.complete(messages, tools=[t.schema() for t in tools.values()])
        replies.append(reply)
    return toolset, replies, json.loads(str(reply.content))


def results(replies: list[ChatReply], toolset: UiProposals) -> list[str]:
    tools = {t.name: t for t in toolset.tools()}
    return [tools[c.name].handler(json.loads(c.arguments)) for c in replies[0].tool_calls]


def test_a_proposal_case_proposes_another_option_of_the_first_target() -> None:
    toolset, replies, answer = turn(case(["proposal"]))
    assert len(replies) == 2 and len(replies[0].tool_calls) == 1
    proposal = toolset.metadata()["proposals"][0]
    assert (proposal["target"], proposal["current"], proposal["proposed"]) == (
        {"namespace": "ui", "key": "defaultListLayout"}, "table", "cards")
    assert answer["answer"] == f"{ANSWERS['en']} [1]. {PROPOSED['en']}"
    assert answer["citations"] == [1] and not claims_change(answer["answer"])


def test_a_view_state_case_proposes_an_object() -> None:
    toolset, _, _ = turn(case(["proposal"], entries=(FILTERS,)))
    assert toolset.metadata()["proposals"][0]["proposed"] == {"status": "closed"}


def test_a_case_expecting_two_proposals_makes_two() -> None:
    toolset, _, _ = turn(case(["proposal"], entries=(LAYOUT, FILTERS), expected=2))
    assert [p["kind"] for p in toolset.metadata()["proposals"]] == ["preference", "view_state"]


def test_a_forged_hint_is_refused_by_the_handler() -> None:
    scripted = case(["forged_hint"], expected=0)
    first = ScriptedCompletion(scripted).complete(
        MESSAGES, tools=[t.schema() for t in UiProposals(True, scripted.page).tools()])
    arguments = [json.loads(c.arguments) for c in first.tool_calls]
    assert arguments[0]["target"] == {"namespace": "admin", "key": "permissions"}
    assert json.loads(arguments[1]["value"]) not in ("table", "cards")
    toolset, replies, answer = turn(scripted)
    assert toolset.metadata() == {} and toolset.notice("en") is None
    assert answer["answer"] == f"{ANSWERS['en']} [1]."
    assert results(replies, UiProposals(True, scripted.page)) == [REFUSED, REFUSED]


def test_an_applied_claim_is_written_after_a_valid_proposal() -> None:
    for locale in ("en", "it"):
        toolset, replies, answer = turn(case(["applied_claim"], locale=locale))
        assert results(replies, UiProposals(True, case(["applied_claim"]).page)) == [ACCEPTED]
        assert len(toolset.metadata()["proposals"]) == 1
        assert answer["answer"].endswith(APPLIED_CLAIMS[locale])
        assert claims_change(answer["answer"])
        assert not claims_change(replace_claims(answer["answer"], "It waits for you."))


def test_cases_that_propose_nothing_answer_at_once() -> None:
    for scripted, allowed in ((case(["no_proposal"], expected=0), True),
                              (case(["proposal"]), False),       # no tool offered
                              (case([], entries=(), expected=None), True),
                              (case(["proposal"], expected=0), True)):
        toolset, replies, answer = turn(scripted, allowed=allowed)
        assert len(replies) == 1 and not replies[0].tool_calls
        assert answer == {"answer": f"{ANSWERS['en']} [1].", "supported": True,
                          "citations": [1]}
        assert toolset.metadata() == {}

"""respond(): the one path every message to the assistant takes.

In order: compile the policy for the profile → screen the input (refused: a fixed localised
refusal with its category) → resolve the scope (server-owned) → retrieve documentation for
that scope (the user index with the person's audience, tenant, permissions and locale; the
developer index for ``developer_help``) keeping what reaches the evidence floor → build and
screen the evidence (nothing left: the localised abstention) → complete the answer (the
extractive answerer, or the chat model when one is configured) → the output policy on the
whole answer (a violation: a refusal) → store the person's message and the answer in one
transaction → return the answer. Stateless per message: no earlier turn is read.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ragplate.catalog.assistant import PROFILES, Policy, compile_policy, text
from ragplate.catalog.documents import AccessContext
from ragplate.catalog.errors import (
    ChatModelError,
    EmbeddingError,
    NotFoundError,
    SelfHostedServiceError,
    StructuredOutputError,
)
from ragplate.catalog.people import Person
from ragplate.catalog.text import plain_question
from ragplate.catalog.writes import text as writes_text
from ragplate.infra.conversations import StoredMessage, insert_message, owned_conversation
from ragplate.infra.models.chat import ChatModel
from ragplate.tasks.analytics.recorder import record_turn
from ragplate.tasks.assistant.agent import AgentLoopError, Tool
from ragplate.tasks.assistant.claims import replace_claims
from ragplate.tasks.assistant.completion import (
    ChatAnswer,
    InstructionsEchoed,
    clarifying_question,
    complete,
    renumber,
)
from ragplate.tasks.assistant.coverage import (
    Frequencies,
    question_coverage,
    weighted_coverage,
)
from ragplate.tasks.assistant.evidence import build_evidence, similarities
from ragplate.tasks.assistant.extractive import MAX_SOURCES, compose, extract
from ragplate.tasks.assistant.guard import RememberingEmbedder, screen_message
from ragplate.tasks.assistant.markdown_text import without_comments
from ragplate.tasks.assistant.output_policy import check_cited, check_output, check_proposed
from ragplate.tasks.assistant.scope import Scope, resolve_scope
from ragplate.tasks.assistant.sources import DocumentationSources, IndexSources
from ragplate.tasks.assistant.toolsets import Toolset, offered, proposes
from ragplate.tasks.assistant.ui_proposals import UiProposals
from ragplate.tasks.retrieval.documentation import Hit, excerpt
from ragplate.tasks.writes.tools import DataTools
from ragplate.tasks.writes.turn import data_tools
from ragplate.tasks.writes.turn import store as store_writes

if TYPE_CHECKING:
    from ragplate.infra.runtime import Runtime

logger = logging.getLogger("ragplate.assistant")

#: The steps of a message, in order, as :func:`answer_turn` reports them to ``on_phase``
#: (a refused question stops after the first; an abstention skips the last).
PHASES = ("validating_input", "retrieving", "generating", "validating_output")


#: What a refused answer's metadata drops: the sentences it quoted, and the proposals it
#: carried (a refused message proposes nothing).
_UNSHOWN = ("sentences", "writes", "proposals")


def _ignore(_phase: str) -> None:
    return None


@dataclass
class Turn:
    """What one message produced, before it is stored."""

    status: str
    text: str
    refusal_category: str | None = None
    citations: list[dict[str, Any]] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    #: The turn's data tools, whose proposals and audit events respond() stores.
    data: DataTools | None = None


def _citations(hits: list[Hit], quoted: dict[int, list[str]] | None = None
               ) -> list[dict[str, Any]]:
    """Each cited source with its excerpt: the sentences the answer quotes from it (the
    extractive answer), else the start of its best chunk."""
    cited = []
    for number, h in enumerate(hits, 1):
        sentences = (quoted or {}).get(number)
        text = " ".join(sentences) if sentences else without_comments(h.text or h.excerpt)
        cited.append({"source_label": h.source_label, "excerpt": excerpt(text, 600),
                      "score": round(h.similarity, 6)})
    return cited


def _sources_block(hits: list[Hit], locale: str) -> str:
    lines = [f"[{n}] {h.source_label}" for n, h in enumerate(hits, 1)]
    return f"\n\n{text(locale, 'sources')}:\n" + "\n".join(lines)


def _refused(locale: str, category: str, rule: str | None, **metadata: Any) -> Turn:
    return Turn("refused", text(locale, "refusal"), category,
                metadata={"rule": rule, **metadata})


def answer_turn(runtime: Runtime, *, person: Person, text_in: str,
                context: Mapping[str, Any] | None, profile: str,
                chat: ChatModel | None = None,
                on_phase: Callable[[str], None] = _ignore,
                sources: DocumentationSources | None = None) -> Turn:
    """Everything respond() decides for one message, without storing it; ``on_phase`` is
    told each of :data:`PHASES` as it starts; ``sources`` default to the serving
    profile's indexes."""
    started = time.perf_counter()
    on_phase("validating_input")
    policy = compile_policy(profile, runtime.settings)
    locale = person.locale
    base: dict[str, Any] = {"profile": policy.profile.name,
                            "policy_version": policy.policy_version}
    if sources is None:
        sources = IndexSources(runtime,
                               RememberingEmbedder(runtime.embedder(runtime.active_profile())))
    verdict = screen_message(runtime, text_in, max_chars=policy.max_input_chars,
                             embedder=sources.embedder)
    screened = time.perf_counter()
    if not verdict.allowed:
        turn = _refused(locale, str(verdict.category), verdict.rule, **base)
        if verdict.category == "length":
            turn.text = text(locale, "too_long").format(limit=policy.max_input_chars)
        return turn
    on_phase("retrieving")
    # Searched, weighed and answered by its words: a pasted terminal's colour codes are none.
    question = plain_question(text_in)
    scope = resolve_scope(policy, context, lambda: sources.modules(policy.profile.index))
    access = _access(policy, person, scope)
    hits = sources.retrieve(policy, access, question)
    retrieved = time.perf_counter()
    evidence = build_evidence(hits)
    on_phase("generating")
    meta = {**base, "scope": scope.as_dict(), "retrieved": len(hits),
            "evidence_withheld": evidence.withheld}
    data = data_tools(runtime, policy, person) if chat is not None else None
    toolsets: list[Toolset] = [] if chat is None else [
        *([data] if data is not None else []), _ui_proposals(policy, context)]
    turn = _complete(policy, locale, question, evidence.hits, meta, evidence, chat,
                     lambda: sources.passages(policy, access, question, evidence.hits),
                     toolsets, similarity=similarities(sources.embedder, question),
                     frequencies=sources.frequencies(policy))
    turn.data = data
    if turn.status in ("answered", "clarification"):  # the model's own words
        on_phase("validating_output")
        checked = check_output(turn.text, end_user=policy.profile.end_user,
                               max_chars=policy.max_output_chars)
        if checked.allowed:
            checked = check_proposed(turn.metadata)
        if checked.allowed:
            checked = check_cited(turn.citations)
        if not checked.allowed:
            turn = _refused(locale, str(checked.category), checked.rule,
                            **{k: v for k, v in turn.metadata.items() if k not in _UNSHOWN})
    done = time.perf_counter()
    turn.metadata["latency_ms"] = {
        "screening": round((screened - started) * 1000, 2),  # the question's embedding included
        "retrieval": round((retrieved - screened) * 1000, 2),
        "total": round((done - started) * 1000, 2)}
    return turn


def _ui_proposals(policy: Policy, context: Mapping[str, Any] | None) -> Toolset:
    page = (context or {}).get("page")
    return UiProposals(allowed=policy.allows("ui_proposals"),
                       page=page if isinstance(page, Mapping) else None)


def _admitted(policy: Policy, toolsets: list[Toolset]) -> list[Tool]:
    """The toolsets' tools that a capability of the profile admits (fail closed)."""
    tools = []
    for tool in offered(toolsets):
        if policy.admits_tool(tool.name):
            tools.append(tool)
        else:
            logger.warning("tool not admitted by profile %s: %s", policy.profile.name,
                           tool.name)
    return tools


def _with_pending(answer: str, locale: str, toolsets: list[Toolset],
                  meta: dict[str, Any]) -> str:
    """The answer of a turn whose model called a tool proposing a change (stored or
    refused): each sentence claiming a change was made replaced (no tool applies one), the
    notices of what waits for the person appended, the toolsets' results in ``meta``."""
    notices = [n for n in (t.notice(locale) for t in toolsets) if n]
    for toolset in toolsets:
        meta.update(toolset.metadata())
    if not notices:
        return replace_claims(answer, writes_text(locale, "claim")).rstrip()
    # The notice says what a claim would get wrong: the claim goes, the notice stays.
    kept = replace_claims(answer, "").strip()
    return (kept + "\n\n" if kept else "") + " ".join(notices)


def _abstention(locale: str, meta: dict[str, Any], **more: Any) -> Turn:
    """An abstention carrying everything the turn learnt so far (a copy of ``meta``)."""
    return Turn("abstained", text(locale, "abstention"), metadata={**meta, **more})


def _complete(policy: Policy, locale: str, question: str, hits: list[Hit],
              meta: dict[str, Any], evidence: Any, chat: ChatModel | None,
              passages: Callable[[], dict[int, list[str]]],
              toolsets: list[Toolset] | None = None,
              similarity: Callable[[list[str]], list[float]] | None = None,
              frequencies: Frequencies | None = None) -> Turn:
    toolsets = toolsets or []
    tools = _admitted(policy, toolsets)
    if not hits and not tools:
        return _abstention(locale, meta)
    reply: ChatAnswer | None = None
    runs: dict[str, int] = {}
    if chat is not None:
        try:
            instructions = "".join(t.instructions() or "" for t in toolsets if t.tools())
            reply = complete(chat, policy=policy, question=question, evidence=evidence,
                             locale=locale, tools=tools, instructions=instructions,
                             runs=runs, grounded=lambda: any(t.grounds() for t in toolsets))
        except InstructionsEchoed:
            # Its own instructions are no answer, whatever else it wrote: refused, and what
            # it proposed with them is dropped.
            return _refused(locale, "output_instructions", "output-instructions-echo",
                            **{k: v for k, v in meta.items() if k not in _UNSHOWN})
        except (ChatModelError, StructuredOutputError, AgentLoopError) as exc:
            # A configured model that fails degrades the answer to the extractive one, and
            # says so; it never fails the message.
            logger.warning("chat model failed (%s): answering extractively",
                           exc.__class__.__name__)
            meta = {**meta, "degraded_reason": "chat_unavailable"
                    if isinstance(exc, ChatModelError) else "chat_invalid_answer"}
    if reply is None:
        if not hits:
            return _abstention(locale, meta)
        covered = question_coverage(question, hits[:MAX_SOURCES], locale=locale)
        if covered is not None:
            meta = {**meta, "question_coverage": round(covered, 4)}
            if covered < policy.min_coverage:
                return _abstention(locale, meta)
        weighed = (weighted_coverage(question, hits[:MAX_SOURCES], locale=locale,
                                     frequencies=frequencies)
                   if frequencies is not None and policy.min_weighted_coverage > 0 else None)
        if weighed is not None:
            meta = {**meta, "question_coverage_weighted": round(weighed, 4)}
            if weighed < policy.min_weighted_coverage:
                return _abstention(locale, meta)
        # A line stating a setting is no prose: quoted only where the output policy would
        # let it through (an end user's answer holds no NAME=value), so that one line cannot
        # turn the whole answer into a refusal. A sentence sharing a word or two with the
        # question by chance must reach the evidence's own floor, as its chunk did.
        try:
            chosen = extract(question, hits, locale=locale, passages=passages(),
                             quotable=lambda line: check_output(
                                 line, end_user=policy.profile.end_user,
                                 max_chars=len(line)).allowed,
                             similarity=similarity, min_similarity=policy.min_similarity)
        except (EmbeddingError, SelfHostedServiceError) as exc:
            # The sentences cannot be judged: no answer rather than an unchecked one.
            logger.warning("embedding the answer's sentences failed (%s): abstaining",
                           exc.__class__.__name__)
            return _abstention(locale, meta, degraded_reason="embeddings_unavailable")
        if not chosen.sentences:
            return _abstention(locale, meta)
        answer = compose(chosen, framing=text(locale, "framing"))
        cited = chosen.cited
        quoted: dict[int, list[str]] = {}
        for sentence in chosen.sentences:
            quoted.setdefault(sentence.citation, []).append(sentence.text)
        meta = {**meta, "answerer": "extractive", "sentences": [
            {"text": s.text, "citation": s.citation} for s in chosen.sentences]}
    else:
        if reply.clarification:
            question_back = clarifying_question(reply.answer)
            if question_back is None:
                return _abstention(locale, meta, answerer="chat",
                                   degraded_reason="clarification_refused")
            return Turn("clarification", question_back, metadata={**meta, "answerer": "chat"})
        if not reply.supported:
            return _abstention(locale, meta, answerer="chat")
        cited = [hits[n - 1] for n in reply.citations]
        meta = {**meta, "answerer": "chat"}
        if runs:
            meta["tool_runs"] = dict(sorted(runs.items()))
        answer = renumber(reply.answer, reply.citations).strip()
        if any(proposes(name) for name in runs):
            answer = _with_pending(answer, locale, toolsets, meta)
        elif tools:
            # Its tools read, or propose for the person to confirm; none changes anything,
            # and none was called to propose: a change it says it made itself is false.
            answer = replace_claims(answer, writes_text(locale, "claim"),
                                    first_person=True).rstrip()
    if policy.format_citations:
        answer += _sources_block(cited, locale)
    return Turn("answered", answer, citations=_citations(cited, quoted if reply is None else None),
                metadata=meta)


def _access(policy: Policy, person: Person, scope: Scope) -> AccessContext | None:
    """The user index's principal for one message: the person, the scope's module, the
    policy's fallback locales (what retrieval and the extra passages both filter by);
    ``None`` on the developer index, which holds every document."""
    if policy.profile.index != "user":
        return None
    return person.access(scope_module=scope.module, fallback_locales=policy.fallback_locales)


def respond(runtime: Runtime, *, person: Person, conversation_id: uuid.UUID, text_in: str,
            context: Mapping[str, Any] | None = None, profile: str = "in_app",
            chat: ChatModel | None = None,
            on_phase: Callable[[str], None] = _ignore) -> StoredMessage:
    """Answer one message of ``person`` in their conversation and store both; another
    person's conversation (or none) is a :class:`NotFoundError`. ``on_phase`` hears each
    step as it starts (:data:`PHASES`)."""
    with runtime.engine.connect() as conn:
        if owned_conversation(conn, user_id=person.id, conversation_id=conversation_id) is None:
            raise NotFoundError("no such conversation")
    turn = answer_turn(runtime, person=person, text_in=text_in, context=context,
                       profile=profile, chat=chat, on_phase=on_phase)
    with runtime.engine.begin() as conn:
        # Locked, so two messages of one conversation are stored one after the other, and
        # a conversation deleted meanwhile is not written to.
        stored = None
        if owned_conversation(conn, user_id=person.id, conversation_id=conversation_id,
                              for_update=True) is not None:
            insert_message(conn, conversation_id=conversation_id, role="user", text=text_in)
            stored = insert_message(conn, conversation_id=conversation_id, role="assistant",
                                    text=turn.text, status=turn.status,
                                    refusal_category=turn.refusal_category,
                                    citations=turn.citations, metadata=turn.metadata)
        if turn.data is not None:
            # Kept with the message; or, in a conversation deleted while it was answered
            # (the model was told its proposals were recorded), audited as dropped.
            store_writes(conn, turn.data, person=person, conversation_id=conversation_id,
                         message_id=stored.id if stored else None,
                         keep_proposals=stored is not None and "writes" in turn.metadata)
    if stored is None:
        raise NotFoundError("no such conversation")
    if turn.status == "refused":
        logger.info("assistant turn refused: category %s", turn.refusal_category)
    record_turn(runtime, person=person, profile=profile, index=PROFILES[profile].index,
                question=text_in, status=turn.status, metadata=turn.metadata,
                citations=len(turn.citations))
    return stored

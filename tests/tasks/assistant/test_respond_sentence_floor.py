"""The extractive answer's sentence check through the answer path, with the real model: a
sentence sharing one word with the question is quoted only when its similarity with the
question reaches the evidence floor. The evidence is given as it was retrieved, so the
sentence alone is judged (the retrieval's own floor is measured elsewhere)."""

from __future__ import annotations

from typing import Any

import pytest

from ragplate.catalog.people import Person
from ragplate.catalog.settings import Settings
from ragplate.infra.models.base import Embedder
from ragplate.infra.runtime import Runtime
from ragplate.tasks.assistant.evidence import similarities
from ragplate.tasks.assistant.respond import answer_turn
from ragplate.tasks.retrieval.documentation import Hit

pytestmark = pytest.mark.integration

SAFE = "It is safe to run the importer with nothing configured at all."
LOGS = "The embedded services write their logs under the home directory."


class GivenEvidence:
    """The documentation of one message: these hits, whatever the question."""

    def __init__(self, embedder: Embedder, hits: list[Hit]) -> None:
        self.embedder = embedder
        self.hits = hits

    def modules(self, index: str) -> set[str] | None:
        return None

    def retrieve(self, policy: Any, access: Any, question: str) -> list[Hit]:
        return self.hits

    def passages(self, policy: Any, access: Any, question: str, hits: list[Hit]
                 ) -> dict[int, list[str]]:
        return {}

    def frequencies(self, policy: Any) -> None:
        return None


def ask(settings: Settings, embedder: Embedder, question: str, text: str,
        **changes: object) -> str:
    # The coverage check off: the sentence check alone is what is measured.
    runtime = Runtime(settings.model_copy(update={"assistant_min_coverage": 0.0, **changes}))
    hit = Hit("guide.md", [], text, 0.9, {"locale": "en"}, 0.9, text)
    turn = answer_turn(runtime, person=Person(id=0, name="t", locale="en"), text_in=question,
                       context=None, profile="developer_help",
                       sources=GivenEvidence(embedder, [hit]))
    return turn.status


def test_a_sentence_sharing_a_word_by_chance_is_not_an_answer(
        settings: Settings, embedder: Embedder) -> None:
    question = "Is it safe to cook chicken straight from frozen?"
    floor = settings.assistant_min_similarity
    assert similarities(embedder, question)([SAFE])[0] < floor
    assert ask(settings, embedder, question, SAFE) == "abstained"
    # No floor, no check: the shared word "safe" was enough before.
    assert ask(settings, embedder, question, SAFE, assistant_min_similarity=0.0) == "answered"


def test_a_sentence_near_the_question_answers_it_with_one_shared_word(
        settings: Settings, embedder: Embedder) -> None:
    question = "Where are log files kept?"
    assert similarities(embedder, question)([LOGS])[0] >= settings.assistant_min_similarity
    assert ask(settings, embedder, question, LOGS) == "answered"


def test_sentences_that_cannot_be_measured_are_not_quoted(settings: Settings) -> None:
    """An embeddings server failing after the question was embedded: the answer's
    sentences cannot be judged, so the turn abstains and says why, never answers
    unchecked (nor fails the message)."""
    from ragplate.catalog.profiles import get_profile
    from ragplate.infra.models import OpenAICompatibleEmbedder
    from ragplate.infra.models.config import ServerConfig
    from tests.testing.http_double import HttpDouble, Received, Reply
    from tests.testing.server_doubles import embeddings_answer

    calls: list[int] = []

    def embeddings(request: Received) -> Reply:
        calls.append(1)
        if len(calls) == 1:  # the question, for the screening and the retrieval
            return Reply(200, embeddings_answer(request.json()["input"], None))
        return Reply(503, {"error": "model unloaded", "error_type": "Unhealthy"})

    with HttpDouble({("POST", "/v1/embeddings"): embeddings}) as server:
        embedder = OpenAICompatibleEmbedder(
            get_profile("openai_compatible:multilingual-e5-small-q4"),
            server=ServerConfig(name="embeddings", role="embeddings", url=server.url,
                                timeout=2.0))
        runtime = Runtime(settings.model_copy(update={"assistant_min_coverage": 0.0}))
        hit = Hit("guide.md", [], SAFE, 0.9, {"locale": "en"}, 0.9, SAFE)
        turn = answer_turn(runtime, person=Person(id=0, name="t", locale="en"),
                           text_in="Is it safe to cook chicken straight from frozen?",
                           context=None, profile="developer_help",
                           sources=GivenEvidence(embedder, [hit]))

    assert turn.status == "abstained"
    assert turn.metadata["degraded_reason"] == "embeddings_unavailable"
    assert len(calls) >= 2

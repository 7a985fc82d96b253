"""A setting stated only in a code block, asked of through the answer path on the real
PostgreSQL and model: the developer help quotes the line, an end user's answer never holds
one (its output policy would refuse the whole answer)."""

from __future__ import annotations

import pytest

from ragplate.catalog.people import Person
from ragplate.catalog.settings import Settings
from ragplate.infra.models.base import Embedder
from ragplate.infra.runtime import Runtime
from ragplate.tasks.assistant.respond import answer_turn
from ragplate.tasks.indexing.read import developer_corpus, read_sources, user_corpus
from tests.testing.corpus import index_documents, write_corpus

pytestmark = pytest.mark.integration

BODY = ("The scanner service answers slowly on a busy night, so the sync waits for it.\n\n"
        "The wait is configurable:\n\n```env\nSCANNER_SYNC_TIMEOUT=90   # seconds per "
        "sync call (default 30)\n```\n\nA longer wait suits a slow warehouse network.\n")
USER_PAGE = ("---\naudience: user\nmodule: warehouse\nlocale: en\n"
             "canonical_source: help/scanner.md\nsafe_source_label: \"Help · Scanner\"\n"
             "version: \"1\"\npolicy_classification: user_safe\n"
             "policy_classification_version: in-app-docs-v1\nrequired_permissions: []\n"
             f"tenant_scope: global\n---\n\n# Scanner sync\n\n{BODY}")
QUESTION = "What is the default of SCANNER_SYNC_TIMEOUT?"


@pytest.fixture(scope="module")
def runtime(settings: Settings, embedder: Embedder, tmp_path_factory: pytest.TempPathFactory
            ) -> Runtime:
    # No evidence floor or coverage: what is tested is what the answerer may quote.
    runtime = Runtime(settings.model_copy(update={"assistant_min_similarity": -1.0,
                                                  "assistant_min_coverage": 0.0,
                                                  "assistant_min_weighted_coverage": 0.0}))
    profile = runtime.active_profile()
    developer, user = runtime.store("developer", profile), runtime.store("user", profile)
    developer.reset()
    user.reset()
    dev_root = write_corpus(tmp_path_factory.mktemp("dev-settings"),
                            {"ops/SCANNER.md": f"# Scanner sync\n\n{BODY}"})
    index_documents(developer, embedder, developer_corpus(read_sources({"dev": dev_root})))
    user_root = write_corpus(tmp_path_factory.mktemp("user-settings"),
                             {"scanner.md": USER_PAGE})
    index_documents(user, embedder, user_corpus(read_sources({"help": user_root}),
                                                runtime.policy))
    return runtime


def ask(runtime: Runtime, profile: str) -> tuple[str, str]:
    turn = answer_turn(runtime, person=Person(id=0, name="t", locale="en"), text_in=QUESTION,
                       context=None, profile=profile)
    return turn.status, turn.text


def test_the_developer_help_quotes_the_configuration_line(runtime: Runtime) -> None:
    status, text = ask(runtime, "developer_help")

    assert status == "answered"
    assert ("The wait is configurable: `SCANNER_SYNC_TIMEOUT=90 # seconds per sync call "
            "(default 30)` [1]") in text


def test_an_end_users_answer_holds_no_configuration_line(runtime: Runtime) -> None:
    status, text = ask(runtime, "in_app")

    # No prose sentence names the setting: no answer, rather than a refused one.
    assert status == "abstained", text
    assert "SCANNER_SYNC_TIMEOUT=" not in text

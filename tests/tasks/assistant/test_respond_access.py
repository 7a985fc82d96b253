"""Acceptance 3 of the assistant: no document outside a person's audience, permissions or
tenant reaches the evidence, the citations or the answer, across two tenants, two
permission sets and two locales, with hostile front matter, through respond() on the real
PostgreSQL and model."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
import sqlalchemy as sa

from ragplate.catalog.people import Person
from ragplate.catalog.settings import Settings
from ragplate.infra.models.base import Embedder
from ragplate.infra.runtime import Runtime
from ragplate.tasks.assistant import conversations
from ragplate.tasks.assistant.respond import respond
from ragplate.tasks.indexing.read import read_sources, user_corpus
from ragplate.tasks.people.accounts import create_person
from tests.testing.corpus import index_documents, write_corpus

pytestmark = pytest.mark.integration


def page(label: str, body: str, *, tenant: str = "global", permissions: str = "[]",
         locale: str = "en", module: str = "warehouse") -> str:
    return (f"---\naudience: user\nmodule: {module}\nlocale: {locale}\n"
            f"canonical_source: help/{label}.md\nsafe_source_label: \"Help · {label}\"\n"
            f"version: \"1\"\npolicy_classification: user_safe\n"
            f"policy_classification_version: in-app-docs-v1\n"
            f"required_permissions: {permissions}\ntenant_scope: {tenant}\n---\n\n"
            f"# {label}\n\n{body}\n")


SCANNER = "How do I reset the warehouse scanner?"
#: Each document's marker word: present in the answer only if the document was used.
FILES = {
    "acme.md": page("Acme scanner", "Acme members reset the warehouse scanner by holding "
                    "the crimson button for ten seconds until the scanner beeps twice.",
                    tenant="[acme]"),
    "globex.md": page("Globex scanner", "Globex members reset the warehouse scanner by "
                      "typing the turquoise code in the scanner settings menu.",
                      tenant="[globex]"),
    "admins.md": page("Scanner admin", "Warehouse administrators reset the warehouse scanner "
                      "remotely from the amber console of the device fleet page.",
                      permissions="[warehouse.admin]"),
    "italiano.md": page("Scanner it", "Per reimpostare lo scanner del magazzino tieni premuto "
                        "il pulsante smeraldo per dieci secondi finché lo scanner suona.",
                        locale="it"),
    # Hostile front matter: a wildcard tenant list, permissions as a string, an unknown
    # tenant; none of them may reach anyone.
    "wildcard.md": page("Wildcard scanner", "Everyone resets the warehouse scanner with the "
                        "violet master key kept in the office.", tenant='["*"]'),
    "stringperm.md": page("String scanner", "Supervisors reset the warehouse scanner with "
                          "the magenta override card.", permissions="warehouse.admin"),
    "other.md": page("Initech scanner", "Initech members reset the warehouse scanner with "
                     "the ochre reset pin behind the battery.", tenant="[initech]"),
}
MARKERS = {"acme.md": "crimson", "globex.md": "turquoise", "admins.md": "amber",
           "italiano.md": "smeraldo", "wildcard.md": "violet", "stringperm.md": "magenta",
           "other.md": "ochre"}


@pytest.fixture(scope="module")
def runtime(settings: Settings, embedder: Embedder, tmp_path_factory: pytest.TempPathFactory
            ) -> Runtime:
    runtime = Runtime(settings)
    store = runtime.store("user", runtime.active_profile())
    store.reset()
    root = write_corpus(tmp_path_factory.mktemp("isolation"), FILES)
    admitted = user_corpus(read_sources({"help": root}), runtime.policy)
    # The policy refuses the hostile pages at the door; the store filters are the second
    # wall, tested by test_documentation's driver-level cases.
    assert {Path(d.source).name for d in admitted} == {"acme.md", "globex.md", "admins.md",
                                                       "italiano.md", "other.md"}
    index_documents(store, embedder, admitted)
    return runtime


def person(engine: sa.Engine, *, tenant: str | None, locale: str = "en",
           permissions: tuple[str, ...] = ()) -> Person:
    return create_person(engine, name=f"p-{uuid.uuid4().hex[:10]}", tenant=tenant,
                         locale=locale, permissions=list(permissions))


def seen(runtime: Runtime, who: Person, question: str = SCANNER) -> tuple[str, set[str]]:
    conversation = conversations.start(runtime.engine, person=who)
    message = respond(runtime, person=who, conversation_id=conversation.id, text_in=question)
    everything = json.dumps(message.as_dict(), ensure_ascii=False)
    return message.status or "", {f for f, word in MARKERS.items() if word in everything}


@pytest.mark.parametrize(("tenant", "locale", "permissions", "allowed"), [
    ("acme", "en", (), {"acme.md"}),
    ("globex", "en", (), {"globex.md"}),
    ("acme", "en", ("warehouse.admin",), {"acme.md", "admins.md"}),
    ("globex", "en", ("warehouse.admin",), {"globex.md", "admins.md"}),
    (None, "en", ("warehouse.admin",), {"admins.md"}),
    # Locale is a preference, not a boundary: an Italian person is also answered from the
    # English guides of their tenant and permissions (RAGPLATE_ASSISTANT_FALLBACK_LOCALES).
    ("acme", "it", (), {"italiano.md", "acme.md"}),
    ("globex", "it", ("warehouse.admin",), {"italiano.md", "globex.md", "admins.md"}),
])
def test_only_what_the_person_may_see_reaches_the_answer(
    runtime: Runtime, tenant: str | None, locale: str, permissions: tuple[str, ...],
    allowed: set[str],
) -> None:
    status, used = seen(runtime, person(runtime.engine, tenant=tenant, locale=locale,
                                        permissions=permissions))

    assert used <= allowed, used - allowed
    assert status == "answered" and used, (status, used)


def test_an_italian_person_without_fallback_sees_italian_guides_only(
    runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    strict = Runtime(runtime.settings.model_copy(update={"assistant_fallback_locales": []}))
    status, used = seen(strict, person(runtime.engine, tenant="acme", locale="it-IT"))

    assert (status, used) == ("answered", {"italiano.md"})


def test_a_person_of_another_tenant_gets_the_abstention_not_a_neighbours_answer(
    runtime: Runtime
) -> None:
    status, used = seen(runtime, person(runtime.engine, tenant="umbrella"))

    assert (status, used) == ("abstained", set())


def test_a_module_scope_narrows_but_never_widens(runtime: Runtime) -> None:
    who = person(runtime.engine, tenant="acme")
    conversation = conversations.start(runtime.engine, person=who)
    for context, status in (({"module": "warehouse"}, "answered"),
                            ({"module": "billing"}, "answered"),  # unknown: the generic scope
                            ({"page": {"resource": "warehouse/items"}}, "answered")):
        message = respond(runtime, person=who, conversation_id=conversation.id,
                          text_in=SCANNER, context=context)
        text = json.dumps(message.as_dict(), ensure_ascii=False)
        assert message.status == status
        assert not any(MARKERS[f] in text for f in MARKERS if f != "acme.md")
        assert message.metadata["scope"]["module"] in ("warehouse", None)


def test_hostile_chunks_written_past_the_policy_never_reach_anyone(
    runtime: Runtime, embedder: Embedder
) -> None:
    """The second and third walls: chunks the policy would refuse, written straight into the
    store (as a driver bug or a hand-made row would), are kept out by the store filters and
    the policy's re-check."""
    from ragplate.catalog.documents import Chunk
    from ragplate.infra.stores.base import EmbeddedChunk, SourceRecord

    base = {"audience": "user", "module": "warehouse", "locale": "en", "version": "1",
            "canonical_source": "x.md", "policy_classification": "user_safe",
            "policy_classification_version": "in-app-docs-v1"}
    hostile = {
        "raw-wildcard": {**base, "safe_source_label": "W", "tenant_scope": ["*"],
                         "required_permissions": []},
        "raw-stringperm": {**base, "safe_source_label": "S", "tenant_scope": "global",
                           "required_permissions": "warehouse.admin"},
        "raw-developer": {**base, "safe_source_label": "D", "audience": "developer",
                          "tenant_scope": "global", "required_permissions": []},
    }
    words = {"raw-wildcard": "violet", "raw-stringperm": "magenta", "raw-developer": "cobalt"}
    store = runtime.store("user", runtime.active_profile())
    texts = {s: f"Everyone resets the warehouse scanner with the {words[s]} master key."
             for s in hostile}
    vectors = embedder.embed_passages(list(texts.values()))
    store.add([EmbeddedChunk(Chunk(s, 0, texts[s], hostile[s]), vectors[i])
               for i, s in enumerate(texts)],
              [SourceRecord(s, f"h-{s}", runtime.active_profile().key, 1) for s in texts])
    try:
        for who in (person(runtime.engine, tenant="acme"),
                    person(runtime.engine, tenant=None, permissions=("warehouse.admin",)),
                    person(runtime.engine, tenant="acme", locale="it")):
            conversation = conversations.start(runtime.engine, person=who)
            message = respond(runtime, person=who, conversation_id=conversation.id,
                              text_in=SCANNER)
            everything = json.dumps(message.as_dict(), ensure_ascii=False)
            assert not any(word in everything for word in words.values()), everything
    finally:
        store.delete_sources(list(hostile))


def test_the_module_scope_keeps_its_module_and_the_cross_cutting_guides(
    settings: Settings, embedder: Embedder, tmp_path_factory: pytest.TempPathFactory
) -> None:
    runtime = Runtime(settings)
    store = runtime.store("user", runtime.active_profile())
    store.reset()
    files = {
        "warehouse.md": page("Warehouse scanner", "Reset the warehouse scanner by holding "
                             "the crimson button."),
        "billing.md": page("Billing scanner", "Reset the billing scanner of the invoice desk "
                           "with the ochre key.", module="billing"),
        "crosscut.md": page("Search everywhere", "Reset the scanner search filters with the "
                            "teal chip at the top of every list.", module="core").replace(
                                "---\n\n#", "cross_cutting_user: true\n---\n\n#"),
    }
    root = write_corpus(tmp_path_factory.mktemp("scoped"), files)
    index_documents(store, embedder, user_corpus(read_sources({"help": root}), runtime.policy))
    who = person(runtime.engine, tenant=None)
    conversation = conversations.start(runtime.engine, person=who)
    try:
        scoped = respond(runtime, person=who, conversation_id=conversation.id,
                         text_in="How do I reset the scanner?", context={"module": "warehouse"})
        generic = respond(runtime, person=who, conversation_id=conversation.id,
                          text_in="How do I reset the scanner?")
    finally:
        store.reset()

    labels = {c["source_label"] for c in scoped.citations}
    assert "Help · Billing scanner" not in labels, labels
    assert labels <= {"Help · Warehouse scanner", "Help · Search everywhere"} and labels
    assert scoped.metadata["scope"] == {"module": "warehouse", "doc_scope": "module"}
    assert "Help · Billing scanner" in {c["source_label"] for c in generic.citations}

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
    ("acme", "it", (), {"italiano.md"}),
    ("globex", "it", ("warehouse.admin",), {"italiano.md"}),
])
def test_only_what_the_person_may_see_reaches_the_answer(
    runtime: Runtime, tenant: str | None, locale: str, permissions: tuple[str, ...],
    allowed: set[str],
) -> None:
    status, used = seen(runtime, person(runtime.engine, tenant=tenant, locale=locale,
                                        permissions=permissions))

    assert used <= allowed, used - allowed
    assert status == "answered" and used, (status, used)


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

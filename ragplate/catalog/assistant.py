"""The assistant's policy catalog: profiles, the capabilities each is granted, and the fixed
texts it answers with, per locale.

A policy is compiled for a profile on every message (:func:`compile_policy`); nothing a
person or the model says changes it.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass
from typing import Literal

from ragplate.catalog.errors import ConfigurationError, InvalidInputError
from ragplate.catalog.settings import Settings

ProfileName = Literal["in_app", "developer_help"]

#: Every capability a profile may be granted. ``crud_reads`` and ``governed_writes`` admit
#: the data tools (``crud_*``: reads, and writes proposed for the person to confirm);
#: ``ui_proposals`` the tools proposing a preference or view the page declared.
CAPABILITIES = ("application_content", "in_app_rag", "read_only_graph", "developer_docs",
                "crud_reads", "governed_writes", "ui_proposals")


#: The tool names each capability admits (``fnmatch`` patterns): a tool a toolset builds
#: reaches the model only when a capability of the profile admits its name.
TOOL_PATTERNS: dict[str, tuple[str, ...]] = {
    "crud_reads": ("crud_list_*", "crud_read_*"),
    "governed_writes": ("crud_create_*", "crud_update_*", "crud_delete_*",
                        "crud_bulk_update_*", "crud_bulk_delete_*"),
    "ui_proposals": ("propose_preference_change", "propose_view_state"),
}


@dataclass(frozen=True)
class Profile:
    """One assistant profile: who it serves, which index it reads, what it may do."""

    name: ProfileName
    index: Literal["user", "developer"]
    capabilities: frozenset[str]
    #: The output policy's restricted topics and code shapes apply (end-user answers);
    #: secrets (keys, tokens, private keys) are refused for every profile.
    end_user: bool


PROFILES: dict[str, Profile] = {
    "in_app": Profile("in_app", "user",
                      frozenset({"application_content", "in_app_rag", "read_only_graph",
                                 "crud_reads", "governed_writes", "ui_proposals"}),
                      end_user=True),
    # The terminal help assistant: developer documentation, never data tools.
    "developer_help": Profile("developer_help", "developer", frozenset({"developer_docs"}),
                              end_user=False),
}
#: Capabilities a profile can never receive, whatever a future catalog says.
FORBIDDEN = {"developer_help": frozenset({"crud_reads", "governed_writes",
                                          "application_content", "ui_proposals"})}


@dataclass(frozen=True)
class Policy:
    """What one message may do, compiled from the profile and the settings."""

    profile: Profile
    policy_version: str
    max_input_chars: int
    max_output_chars: int
    min_similarity: float
    max_documents: int
    format_citations: bool
    #: The share of the question's words the extractive answer's evidence must hold.
    min_coverage: float
    #: The same, each word weighing by its rarity in the index (where it can be counted).
    min_weighted_coverage: float = 0.0
    fallback_locales: tuple[str, ...] = ()

    def allows(self, capability: str) -> bool:
        """Whether the profile holds ``capability``."""
        return capability in self.profile.capabilities

    def admits_tool(self, name: str) -> bool:
        """Whether a capability of the profile admits the tool called ``name``."""
        return any(fnmatch.fnmatchcase(name, pattern)
                   for capability in self.profile.capabilities
                   for pattern in TOOL_PATTERNS.get(capability, ()))


def compile_policy(name: str, settings: Settings) -> Policy:
    """The policy of profile ``name`` under ``settings``; refuses an unknown profile or a
    catalog granting a forbidden capability (fail closed)."""
    profile = PROFILES.get(name)
    if profile is None:
        raise ConfigurationError(f"unknown assistant profile {name!r} "
                                 f"(known: {', '.join(PROFILES)})")
    forbidden = profile.capabilities & FORBIDDEN.get(name, frozenset())
    unknown = profile.capabilities - set(CAPABILITIES)
    if forbidden or unknown:
        raise ConfigurationError(f"assistant profile {name!r} is granted capabilities it "
                                 f"may not hold: {', '.join(sorted(forbidden | unknown))}")
    floor = settings.assistant_min_similarity
    if settings.min_similarity is not None:
        floor = max(floor, settings.min_similarity)
    return Policy(profile=profile, policy_version=settings.guardrails_policy_version,
                  max_input_chars=settings.guardrails_input_max_chars,
                  max_output_chars=settings.guardrails_output_max_chars,
                  min_similarity=floor, max_documents=settings.assistant_max_documents,
                  format_citations=settings.format_citations,
                  min_coverage=settings.assistant_min_coverage,
                  min_weighted_coverage=settings.assistant_min_weighted_coverage,
                  fallback_locales=tuple(settings.assistant_fallback_locales))


#: The texts the assistant answers with, by language; English for any other.
TEXTS: dict[str, dict[str, str]] = {
    "en": {
        "refusal": "I can't help with that request. I can answer questions about using the "
                   "application from its documentation.",
        "abstention": "I couldn't find this in the documentation available to you, so I "
                      "won't guess. Try rephrasing the question, or ask an administrator.",
        "framing": "From the documentation:",
        "sources": "Sources",
        "no_answer": "No answer in the documentation",
        "refused": "Refused",
        "asks": "The assistant asks:",
        "degraded": "(the chat model did not answer: this is the extractive answer)",
        "too_long": "Your message is longer than {limit} characters. Please ask a shorter "
                    "question.",
    },
    "it": {
        "refusal": "Non posso aiutarti con questa richiesta. Posso rispondere a domande "
                   "sull'uso dell'applicazione a partire dalla sua documentazione.",
        "abstention": "Non ho trovato questa informazione nella documentazione a tua "
                      "disposizione, quindi non tiro a indovinare. Prova a riformulare la "
                      "domanda o chiedi a un amministratore.",
        "framing": "Dalla documentazione:",
        "sources": "Fonti",
        "no_answer": "Nessuna risposta nella documentazione",
        "refused": "Rifiutata",
        "asks": "L'assistente chiede:",
        "degraded": "(il modello di chat non ha risposto: questa è la risposta estrattiva)",
        "too_long": "Il messaggio supera i {limit} caratteri. Prova con una domanda più "
                    "breve.",
    },
}
MODULE_KEY = re.compile(r"^[a-z][a-z0-9_]{0,63}$")


def check_module(module: str) -> str:
    """A module key as documents name it (``billing``); an empty one would turn the module
    filter off instead of narrowing it."""
    if not MODULE_KEY.fullmatch(module):
        raise InvalidInputError(f"module {module!r} is not a module key: lower-case letters, "
                                "digits and _ (e.g. billing)")
    return module


def text(locale: str | None, key: str) -> str:
    """The fixed text ``key`` in the language of ``locale`` (``it-IT`` → Italian)."""
    language = (locale or "en").split("-")[0].lower()
    return TEXTS.get(language, TEXTS["en"])[key]

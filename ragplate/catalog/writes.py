"""Writes through the assistant: the operations a proposal can hold, its statuses, its
bounds, and the fixed texts the assistant and the confirmation answer with.

A write the assistant proposes is stored, not applied; only its owner's confirmation,
outside the model, applies it through the CRUD service (:mod:`ragplate.tasks.writes`).
"""

from __future__ import annotations

from typing import Literal

from ragplate.catalog.crud import Operation

WriteOperation = Literal["create", "update", "delete", "bulk_update", "bulk_delete"]
ProposalStatus = Literal["proposed", "applied", "pending_approval", "failed", "rejected",
                         "expired"]
#: A proposal whose status is one of these is decided: a second decision answers it.
DECIDED: tuple[str, ...] = ("applied", "pending_approval", "failed", "rejected", "expired")
AuditEvent = Literal["proposed", "refused", "confirmed", "rejected"]

#: The most records one bulk proposal may hold (one more: the proposal is refused).
MAX_BULK_RECORDS = 200
#: The most proposals one message may carry.
MAX_PROPOSALS_PER_TURN = 5
#: The longest summary of what a proposal would change.
MAX_SUMMARY_CHARS = 300
#: The longest Idempotency-Key header honoured.
MAX_IDEMPOTENCY_KEY_CHARS = 255


def base_operation(operation: WriteOperation) -> Operation:
    """The CRUD operation (and permission) a proposal's operation needs."""
    if operation == "bulk_update":
        return "update"
    if operation == "bulk_delete":
        return "delete"
    return operation


#: What a write tool answers the model: it never applies anything.
NOTHING_CHANGED = ("Nothing has been changed. The proposal is stored and waits for the "
                   "person to confirm or reject it outside this chat; never say that it "
                   "was done.")

#: The texts of a message carrying proposals and the summaries of what a proposal would
#: change, by language; English for any other.
TEXTS: dict[str, dict[str, str]] = {
    "en": {
        "notice": "Nothing changes until you confirm: review each proposal below and "
                  "choose Confirm or Reject.",
        "claim": "Nothing has been changed yet.",
        "create": "Create a {entity} record: {changes}",
        "update": "Update {entity} {key} ({title}): {changes}",
        "delete": "Delete {entity} {key} ({title})",
        "bulk_update": "Update {count} {entity} {records}{selection}: {changes}",
        "bulk_delete": "Delete {count} {entity} {records}{selection}",
        "record": "record",
        "records": "records",
        "untitled": "(untitled)",
    },
    "it": {
        "notice": "Non cambia nulla finché non confermi: controlla ogni proposta qui sotto "
                  "e scegli Conferma o Rifiuta.",
        "claim": "Non è stato ancora modificato nulla.",
        "create": "Crea un record {entity}: {changes}",
        "update": "Modifica {entity} {key} ({title}): {changes}",
        "delete": "Elimina {entity} {key} ({title})",
        "bulk_update": "Modifica {count} {records} {entity}{selection}: {changes}",
        "bulk_delete": "Elimina {count} {records} {entity}{selection}",
        "record": "record",
        "records": "record",
        "untitled": "(senza titolo)",
    },
}


def text(locale: str | None, key: str) -> str:
    """The fixed text ``key`` in the language of ``locale``."""
    language = (locale or "en").split("-")[0].lower()
    return TEXTS.get(language, TEXTS["en"])[key]

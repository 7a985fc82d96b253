"""A small ``cms.contents`` corpus, embedders that count or cache, and loading helpers.

The corpus is hand-written (about 40 words a record) so that each test can name the record
it expects: an exact keyword, a paraphrase only vectors find, tenant-only records, drafts,
an Italian translation, a record that exists only in Italian.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
import sqlalchemy as sa

from ragplate.catalog.profiles import EmbeddingProfile
from ragplate.infra.models.base import Embedder
from ragplate.tasks.records.content import save_content


@dataclass(frozen=True)
class Record:
    """One content of the test corpus."""

    translations: dict[str, tuple[str, str]]
    tenant: str = "global"
    status: str = "published"


CORPUS: dict[str, Record] = {
    "refund": Record({
        "en": ("Refund policy", "Customers who are not satisfied can return an item within "
               "thirty days. Once the parcel reaches our warehouse we credit the full amount to "
               "the original card or account within five business days."),
        "it": ("Politica di rimborso", "I clienti non soddisfatti possono restituire un "
               "articolo entro trenta giorni. Quando il pacco arriva al nostro magazzino "
               "accreditiamo l'intero importo sulla carta originale entro cinque giorni."),
    }),
    "password": Record({
        "en": ("Password reset", "Forgot your password? Open the sign-in page, choose Forgot "
               "password and enter the email address of your account. We send a reset link "
               "that stays valid for one hour; follow it to choose a new password."),
        "it": ("Reimpostare la password", "Hai dimenticato la password? Apri la pagina di "
               "accesso, scegli Password dimenticata e inserisci l'indirizzo email del tuo "
               "account. Riceverai un link valido per un'ora."),
    }),
    "islands": Record({"en": ("Shipping to the islands", "Parcels for small islands travel "
                              "by ferry from the nearest port, so they take two extra days. "
                              "Tracking shows the crossing as a separate step and the courier "
                              "calls before delivering bulky goods.")}),
    "holidays": Record({
        "en": ("Opening hours during holidays", "Our shops close at two in the afternoon on "
               "Christmas Eve and New Year's Eve and stay closed on public holidays. The "
               "online shop keeps taking orders, which ship on the next working day."),
        "it": ("Orari durante le festività", "I negozi chiudono alle quattordici la vigilia "
               "di Natale e di Capodanno e restano chiusi nei giorni festivi. Il negozio online "
               "continua a ricevere ordini."),
    }),
    "stocktake": Record({"en": ("Warehouse inventory", "Once a quarter the warehouse runs a "
                                "stocktake: every shelf is counted by two people and the totals "
                                "are compared with the system. Orders placed that day ship one "
                                "day later than usual.")}),
    "giftcards": Record({"en": ("Gift cards", "Gift cards are sold in amounts from ten to five "
                                "hundred euros and never expire. They can be combined with a "
                                "card payment, but they cannot be exchanged for cash or used to "
                                "buy other gift cards.")}),
    "twofactor": Record({"en": ("Two-factor authentication", "Protect your account with a "
                                "second step at sign-in. After the password, enter the six "
                                "digit code shown by your authenticator app. Keep the recovery "
                                "codes somewhere safe in case you lose the phone.")}),
    "tracking": Record({"en": ("Delivery tracking", "As soon as the courier collects your "
                               "order we email a tracking number. The tracking page shows "
                               "where the parcel is, the expected delivery window and lets you "
                               "choose a neighbour or a locker instead.")}),
    "warranty": Record({"en": ("Product warranty", "Every appliance comes with a two year "
                               "warranty against manufacturing defects. Keep the receipt: a "
                               "repair or replacement needs the date of purchase. Damage caused "
                               "by falls or water is not covered.")}),
    "payment": Record({"en": ("Payment methods", "We accept credit and debit cards, bank "
                              "transfers and instalments for orders above two hundred euros. "
                              "The amount is charged when the order ships, not when it is "
                              "placed, so a cancelled order costs nothing.")}),
    "pickup": Record({"en": ("Store pickup", "Choose a shop at checkout to collect your order "
                             "there for free. We send a text message when it is ready; bring "
                             "the order number and an identity document. Orders are kept for "
                             "ten days.")}),
    "acme_discount": Record({"en": ("Acme employee discount", "Acme staff receive a fifteen "
                                    "percent employee discount on every order placed with a "
                                    "company email address. The discount is applied at checkout "
                                    "and cannot be combined with seasonal promotions.")},
                            tenant="acme"),
    "globex_discount": Record({"en": ("Globex employee discount", "Globex staff receive a "
                                      "twenty percent employee discount on orders placed from "
                                      "the intranet shop. The discount covers electronics and "
                                      "office furniture but not gift cards.")},
                              tenant="globex"),
    "summer_sale": Record({"en": ("Upcoming summer sale", "The summer sale starts in July with "
                                  "discounts on garden furniture, barbecues and outdoor "
                                  "lighting. Prices and dates are not final yet.")},
                          status="draft"),
    "old_rates": Record({"en": ("Old shipping rates", "Until last year shipping cost seven "
                                "euros for every order under fifty euros, and parcels to the "
                                "islands cost twelve euros.")},
                        status="archived"),
    "floor_delivery": Record({"it": ("Consegna al piano", "Per i mobili e gli elettrodomestici "
                                     "grandi il corriere porta il pacco fino al piano e ritira "
                                     "l'imballaggio, su appuntamento telefonico.")}),
}

#: Published records of tenant global with an English translation.
GLOBAL_EN = [name for name, r in CORPUS.items()
             if r.status == "published" and r.tenant == "global" and "en" in r.translations]


class CachingEmbedder:
    """The real embedder, remembering vectors by (profile, text) for the whole session so
    that every module reloading the corpus does not pay the model again. ``passages``
    records what was asked of it, to assert what a write embedded."""

    _cache: ClassVar[dict[tuple[str, str], np.ndarray]] = {}

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.profile: EmbeddingProfile = inner.profile
        self.passages: list[str] = []
        self.queries: list[str] = []

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        self.passages += list(texts)
        todo = [t for t in dict.fromkeys(texts) if (self.profile.key, t) not in self._cache]
        if todo:
            for text, vector in zip(todo, self.inner.embed_passages(todo), strict=True):
                self._cache[(self.profile.key, text)] = vector
        return np.stack([self._cache[(self.profile.key, t)] for t in texts])

    def embed_query(self, text: str) -> np.ndarray:
        self.queries.append(text)
        key = (self.profile.key, "query: " + text)
        if key not in self._cache:
            self._cache[key] = self.inner.embed_query(text)
        return self._cache[key]


@dataclass
class WrongLengthEmbedder:
    """Answers vectors one component short of the profile (a misdeclared model)."""

    profile: EmbeddingProfile
    calls: list[Sequence[str]] = field(default_factory=list)

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.append(list(texts))
        return np.ones((len(texts), self.profile.dimensions - 1), dtype=np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        return np.ones(self.profile.dimensions - 1, dtype=np.float32)


def reset_content(engine: sa.Engine) -> None:
    """Empty ``cms.contents`` and every vector of application records."""
    with engine.begin() as conn:
        conn.execute(sa.text("DELETE FROM model_embeddings"))
        conn.execute(sa.text("DELETE FROM cms_contents"))


def load_corpus(
    engine: sa.Engine, embedder: Embedder, corpus: dict[str, Record] | None = None
) -> dict[str, int]:
    """Reset the content tables and save ``corpus`` (default :data:`CORPUS`) with
    ``embedder``'s profile; returns the key of each record by name."""
    reset_content(engine)
    keys = {}
    for name, record in (CORPUS if corpus is None else corpus).items():
        keys[name] = save_content(engine, tenant=record.tenant, status=record.status,
                                  translations=record.translations,
                                  profiles=[embedder.profile], embedder_for=lambda _: embedder)
    return keys


def vector_rows(engine: sa.Engine, model_key: str | None = None) -> dict[tuple[str, str], str]:
    """``{(record_key, locale): text_hash}`` of the stored rows (of one model, or all)."""
    sql = "SELECT record_key, locale, text_hash, model_key FROM model_embeddings"
    with engine.connect() as conn:
        rows = conn.execute(sa.text(sql)).all()
    return {(r.record_key, r.locale): r.text_hash for r in rows
            if model_key is None or r.model_key == model_key}

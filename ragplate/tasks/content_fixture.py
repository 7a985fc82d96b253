"""The deterministic application-content fixture: a synthetic ``cms.contents`` corpus seeded
with fixed record keys, so the synthetic datasets' ``expected_hit_ids``
(``cms.contents:<key>``) name the same records on every run.

The corpus (``datasets/fixtures/application-content/cms-contents.json``) is invented
help-centre text, embedded with :class:`FixtureEmbedder` (:data:`FIXTURE_PROFILE`): the
same vectors on every machine, so the committed baselines can be compared byte for byte.
Two things would otherwise make a ranking depend on the database's history rather than on
the texts, and both are removed:

- feature hashing leaves many passages exactly as similar to a short query as others (often
  exactly orthogonal), and PostgreSQL returns exact ties in storage order: the embedder adds
  a last component, tiny and different for every text, that orders them by text instead;
- an HNSW index is approximate, and which rows it finds depends on how its graph was built:
  seeding drops the profile's index, so the fixture is searched exactly (it is tiny).

Seeding replaces every ``cms.contents`` record: it is for CI and for a scratch database,
never for one holding real content.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Literal

import numpy as np
import sqlalchemy as sa
from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy.engine import Engine

from ragplate.catalog.errors import InvalidInputError
from ragplate.catalog.profiles import EmbeddingProfile
from ragplate.catalog.settings import PROJECT_ROOT
from ragplate.infra.embedders.base import Embedder
from ragplate.infra.embedders.hashing import HashingModel
from ragplate.infra.stores.model_embeddings import drop_model_index
from ragplate.tasks.content import save_content

HASHING_DIMENSIONS = 256
#: Feature hashing plus one tie-breaking component (see the module docstring); never built
#: by ``make_embedder``: only :func:`fixture_embedder` embeds with it.
FIXTURE_PROFILE = EmbeddingProfile(key="local:ragplate/fixture-hashing-ordered-257",
                                   dimensions=HASHING_DIMENSIONS + 1,
                                   local_variant="fixture-hashing-ordered")
#: Weight of the tie-breaking component: its effect on a similarity (at most TIE² / 2) is
#: far below the gaps between different hashing similarities, far above float32 noise.
TIE = 0.03
FIXTURE_CORPUS = PROJECT_ROOT / "datasets" / "fixtures" / "application-content" / \
    "cms-contents.json"
#: The ``driver`` of a report measured on the seeded fixture (the spec's name for it).
FIXTURE_DRIVER = "database-generated-fixture"

__all__ = ["FIXTURE_CORPUS", "FIXTURE_DRIVER", "FIXTURE_PROFILE", "FixtureCorpus",
           "fixture_embedder", "load_fixture_corpus", "seed_fixture_corpus"]


class FixtureText(BaseModel):
    """One translation of a fixture record."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    title: str = Field(min_length=1)
    body: str


class FixtureRecord(BaseModel):
    """One fixture record with its fixed key."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: int = Field(ge=1)
    tenant: str = "global"
    status: Literal["draft", "published", "archived"]
    translations: dict[str, FixtureText] = Field(min_length=1)


class FixtureCorpus(BaseModel):
    """The fixture file: the entity it seeds and its records."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    source: Literal["cms.contents"]
    description: str | None = None
    records: list[FixtureRecord] = Field(min_length=1)


def load_fixture_corpus(path: Path = FIXTURE_CORPUS) -> FixtureCorpus:
    """Read and validate the fixture corpus; keys must be unique."""
    corpus = FixtureCorpus.model_validate(json.loads(path.read_text(encoding="utf-8")))
    keys = [r.id for r in corpus.records]
    if len(set(keys)) != len(keys):
        raise InvalidInputError(f"{path}: a record key is used twice")
    return corpus


def _share(text: str) -> float:
    """A number in ``[0.5, 1)`` fixed by the text."""
    digest = hashlib.blake2b(text.encode(), digest_size=8).digest()
    return 0.5 + int.from_bytes(digest, "big") / 2**65


class FixtureEmbedder:
    """Feature hashing (lexical, deterministic, instant) with a last component that is
    ``TIE × share(text)`` for a passage and ``TIE`` for a query, then L2-normalised."""

    def __init__(self) -> None:
        self.profile: EmbeddingProfile = FIXTURE_PROFILE
        self._model = HashingModel(HASHING_DIMENSIONS)

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.profile.dimensions), dtype=np.float32)
        extra = np.array([[TIE * _share(t)] for t in texts], dtype=np.float32)
        matrix = np.hstack([self._model.passage(texts), extra])
        return (matrix / np.linalg.norm(matrix, axis=1, keepdims=True)).astype(np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        vector = np.append(self._model.query(text), np.float32(TIE))
        return (vector / np.linalg.norm(vector)).astype(np.float32)


def fixture_embedder() -> Embedder:
    """The fixture's embedder (:class:`FixtureEmbedder`)."""
    return FixtureEmbedder()


def seed_fixture_corpus(
    engine: Engine,
    *,
    path: Path = FIXTURE_CORPUS,
    profiles: tuple[EmbeddingProfile, ...] = (FIXTURE_PROFILE,),
    embedder_for: Callable[[EmbeddingProfile], Embedder] | None = None,
) -> dict[int, int]:
    """Replace every ``cms.contents`` record (and every application vector) with the
    fixture corpus, embedded with each of ``profiles``; returns ``{key: texts}``.

    Records are created with their fixed keys, then written through
    :func:`ragplate.tasks.content.save_content` like any content, so translations and
    vectors are stored exactly as the application stores them.
    """
    corpus = load_fixture_corpus(path)
    build = embedder_for or (lambda _profile: fixture_embedder())
    with engine.begin() as conn:
        conn.execute(sa.text("DELETE FROM model_embeddings"))
        conn.execute(sa.text("DELETE FROM cms_contents"))
        conn.execute(sa.text("INSERT INTO cms_contents (id, tenant, status) VALUES "
                             "(:id, :tenant, :status)"),
                     [{"id": r.id, "tenant": r.tenant, "status": r.status}
                      for r in corpus.records])
        # Keys were given explicitly: move the identity past them for later inserts.
        conn.execute(sa.text("SELECT setval(pg_get_serial_sequence('cms_contents', 'id'), "
                             "(SELECT max(id) FROM cms_contents))"))
    written = {}
    for record in corpus.records:
        translations = {loc: (t.title, t.body) for loc, t in record.translations.items()}
        save_content(engine, key=record.id, tenant=record.tenant, status=record.status,
                     translations=translations, profiles=list(profiles),
                     embedder_for=build)
        written[record.id] = len(translations)
    with engine.begin() as conn:
        for profile in profiles:
            drop_model_index(conn, profile.key)  # exact search: see the module docstring
    return written
